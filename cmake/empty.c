/* empty.c: lets a module with no sources yet still form a library. */
typedef int trialq_empty_translation_unit;

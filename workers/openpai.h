/* openpai.h: private to the OpenPAI platform (workers/openpai*.c). */
#ifndef TRIALQ_OPENPAI_H
#define TRIALQ_OPENPAI_H

#include <cjson/cJSON.h>

#include "common/common.h"

/* Copies the trial code directory src to dst (which must not exist), honouring the
 * .nniignore files of src and NNI's limits (2000 files and directories, 300 MB; see
 * workers/nniignore.h). The copy is made beside dst and renamed into place, so dst is
 * either complete or absent. */
int pai_copy_tree(const char *src, const char *dst, struct errbuf *e);

/* The job protocol as YAML (block style, every string double-quoted). */
void pai_yaml_emit(struct strbuf *sb, const cJSON *v);

/* "8gb", "512mb", "1.5g", or a number of megabytes -> megabytes (ceil). -1 if bad. */
long long pai_size_mb(const cJSON *v);

/* 'text' quoted for a POSIX shell. Caller frees. */
char *pai_shell_quote(const char *s);

#endif

/* nniignore.h: NNI's .nniignore (gitignore syntax, nested files) and the walk of a
 * trial code directory before it is shipped, with NNI's limits. */
#ifndef TRIALQ_NNIIGNORE_H
#define TRIALQ_NNIIGNORE_H

#include <stdint.h>

#include "common/common.h"

/* NNI's limits on a shipped code directory (validateCodeDir). */
#define CODE_MAX_ENTRIES 2000
#define CODE_MAX_BYTES (300LL * 1024 * 1024)

struct ignore_rules;

/* Parses the text of one .nniignore whose directory is `base` (relative to the code
 * root, "" for the root itself). */
struct ignore_rules *ignore_parse(const char *text, const char *base);
void ignore_free(struct ignore_rules *r);
/* Applies rule sets in order (root first, deeper files later: the last match wins).
 * path is relative to the code root, without a leading or trailing '/'. */
int ignore_match(struct ignore_rules *const *sets, int nsets, const char *path, int is_dir);
/* One gitignore glob against a path ("**" spans directories; '*', '?', [..] do not
 * cross '/'). Exposed for tests. */
int glob_match(const char *pattern, const char *path);

struct code_list {
    char *paths;     /* NUL-separated paths relative to the root (for tar --null -T) */
    size_t len;
    int entries;     /* files + directories (NNI counts both) */
    int64_t bytes;   /* total size of the files */
};
/* Walks root honouring every .nniignore on the way; fails with NNI's limits named.
 * leave_out (NULL for none) names a file never shipped whatever the rules say: the
 * experiment's own config, which holds the platforms' secrets (matched by device and
 * inode, so any path to it). */
int code_list_build(const char *root, const char *leave_out, struct code_list *out, struct errbuf *e);
void code_list_free(struct code_list *l);
/* Copies what code_list_build keeps of src to dst on a filesystem of this host (a shared
 * storage mount): into a temporary sibling first, renamed into place when complete, so
 * that dst is whole or absent; a dst another worker completed first is kept. */
int code_copy_tree(const char *src, const char *dst, const char *leave_out, struct errbuf *e);

#endif

/* kube_storage.c: shipping the trial code directory to the shared storage, once per
 * experiment: the entries that workers/nniignore.c's walk keeps (every .nniignore on
 * the way, NNI's 2,000-entry and 300 MB limits) are copied into place. */
#include <sys/stat.h>

#include "workers/kube.h"
#include "workers/nniignore.h"

int kube_copy_code(const char *src, const char *dst, const char *leave_out, struct errbuf *e)
{
    struct stat sb;
    if (stat(dst, &sb) == 0)
        return 0; /* copied before (by this experiment's earlier worker) */
    return code_copy_tree(src, dst, leave_out, e);
}

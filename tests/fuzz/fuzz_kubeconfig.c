/* fuzz_kubeconfig.c: the kubeconfig reader (workers/kube/config.c) on any file: the
 * input is written to <temp dir>/config, named by KUBECONFIG (with a second entry that
 * does not exist, which kubectl skips), and read as the Kubernetes platforms read it. */
#include "tests/fuzz/fuzz.h"

#include <stdio.h>

#include "workers/kube/kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    static char *path;
    if (!path) {
        path = xasprintf("%s/config", fuzz_dir());
        char *list = xasprintf("%s:%s/missing", path, fuzz_dir());
        setenv("KUBECONFIG", list, 1);
        free(list);
    }
    if (write_file_replace(path, data, size, 0600) < 0)
        abort();
    struct kube_conn k;
    struct errbuf e;
    if (kube_config_load(&k, &e) == 0) {
        if (!k.server || !k.context || !k.cluster)
            abort(); /* success names where to connect */
        kube_conn_clear(&k);
    }
    return 0;
}

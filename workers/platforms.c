/* platforms.c: the registry of platforms, the only list of them all. Adding a platform
 * is one file in workers/ (its struct platform_ops), one entry here, its config schema
 * in config/ and its docs page (docs/architecture.md, "Adding a platform"). The CLI,
 * the worker and the loop find a platform and its traits here, never by its name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/worker.h"

extern const struct platform_ops platform_local, platform_remote, platform_openpai;
extern const struct platform_ops platform_kubeflow, platform_frameworkcontroller, platform_adl;
extern const struct platform_ops platform_dlc, platform_dlts, platform_slurm, platform_aml;

/* This order is the one `nnictl create` lists as supported; the first is the default. */
const struct platform_ops *const platform_all[] = {
    &platform_local,   &platform_kubeflow, &platform_frameworkcontroller,
    &platform_adl,     &platform_openpai,  &platform_remote,
    &platform_dlc,     &platform_dlts,     &platform_slurm,
    &platform_aml,
    NULL,
};

const struct platform_ops *platform_find(const char *name)
{
    for (int i = 0; name && platform_all[i]; i++)
        if (strcmp(platform_all[i]->name, name) == 0)
            return platform_all[i];
    return NULL;
}

char *platform_names_dup(const char *sep)
{
    struct strbuf sb;
    sb_init(&sb);
    for (int i = 0; platform_all[i]; i++)
        sb_printf(&sb, "%s%s", i ? sep : "", platform_all[i]->name);
    return sb_detach(&sb);
}

/* platforms.c: the registry of platforms, built from the one list of them
 * (common/platform_list.h): each X(id, ...) there is the `platform_<id>` its
 * workers/ file defines. The CLI, the worker and the loop find a platform and its traits
 * here, never by its name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/platform_list.h"
#include "workers/worker.h"

#define DECLARE_(id, on_host, shared_storage, machines) extern const struct platform_ops platform_##id;
TRIALQ_PLATFORMS(DECLARE_)

/* platform_list.h's order: the one `nnictl create` lists as supported; the first is the
 * default. */
#define ENTRY_(id, on_host, shared_storage, machines) &platform_##id,
const struct platform_ops *const platform_all[] = {TRIALQ_PLATFORMS(ENTRY_) NULL};

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

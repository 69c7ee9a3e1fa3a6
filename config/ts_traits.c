/* ts_traits.c: what a trainingService entry means beyond its keys (config.h): the
 * machines it runs trials on, whether its trials' files live on a storage of their own.
 * Knowledge of the config schema's platforms, asked by schema/ (machines, packs), which
 * names no platform. */
#include <string.h>

#include "config/config.h"

static int entry_machines(const cJSON *ts,
                          void (*fn)(void *ctx, const char *platform, const char *host, int port, const char *user),
                          void *ctx)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(ts, "platform");
    if (!cJSON_IsString(p))
        return 0;
    if (strcmp(p->valuestring, "local") == 0) {
        fn(ctx, "local", NULL, 0, NULL);
        return 1;
    }
    if (strcmp(p->valuestring, "remote") != 0)
        return 0;
    int n = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(ts, "machineList")) {
        const cJSON *host = cJSON_GetObjectItemCaseSensitive(m, "host");
        const cJSON *port = cJSON_GetObjectItemCaseSensitive(m, "port");
        const cJSON *user = cJSON_GetObjectItemCaseSensitive(m, "user");
        if (!cJSON_IsString(host))
            continue;
        fn(ctx, "remote", host->valuestring, cJSON_IsNumber(port) ? port->valueint : 22,
           cJSON_IsString(user) ? user->valuestring : NULL);
        n++;
    }
    return n;
}

int config_ts_machines(const char *config_json,
                       void (*fn)(void *ctx, const char *platform, const char *host, int port, const char *user),
                       void *ctx)
{
    cJSON *cfg = config_json ? cJSON_Parse(config_json) : NULL;
    if (!cJSON_IsObject(cfg)) {
        cJSON_Delete(cfg);
        return -1;
    }
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(cfg, "trainingService"), *it;
    int n = 0;
    if (cJSON_IsArray(ts)) {
        cJSON_ArrayForEach(it, ts)
            n += entry_machines(it, fn, ctx);
    } else if (cJSON_IsObject(ts)) {
        n = entry_machines(ts, fn, ctx);
    }
    cJSON_Delete(cfg);
    return n;
}

int config_shared_storage(const char *platform)
{
    /* trials on an NFS or Azure share (kubeflow, frameworkcontroller), adl's PVC,
     * OpenPAI's storage config: their trial_dir is a path of that storage */
    static const char *const names[] = {"kubeflow", "frameworkcontroller", "adl", "openpai", NULL};
    for (int i = 0; platform && names[i]; i++)
        if (strcmp(platform, names[i]) == 0)
            return 1;
    return 0;
}

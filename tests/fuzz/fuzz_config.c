/* fuzz_config.c: the experiment config loader (config/: YAML, v1 conversion,
 * validation) on any file, as `nnictl create --config` reads it: the input is written to
 * <temp dir>/exp.yml beside a search_space.json and a code directory it may name. A
 * config it accepts must come back from its canonical JSON (what the api and
 * `nnictl resume` rebuild it from), print, and redact. HOME and NNI's config dir point
 * into the temp dir. */
#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <sys/stat.h>

#include "config/config.h"

static char *path;

static void setup(void)
{
    const char *d = fuzz_dir();
    setenv("HOME", d, 1);
    setenv("NNI_CONFIG_DIR", d, 1);
    unsetenv("VIRTUAL_ENV");
    unsetenv("CONDA_PREFIX");
    char *ss = xasprintf("%s/search_space.json", d);
    static const char space[] = "{\"lr\": {\"_type\": \"loguniform\", \"_value\": [0.0001, 0.1]}}\n";
    char *code = xasprintf("%s/code", d);
    if (write_file_replace(ss, space, sizeof space - 1, 0644) < 0 || mkdir(code, 0755) < 0)
        abort();
    free(ss);
    free(code);
    path = xasprintf("%s/exp.yml", d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    if (!path)
        setup();
    if (write_file_replace(path, data, size, 0644) < 0)
        abort();
    struct exp_config *cfg = NULL;
    struct errbuf e;
    if (config_load(path, &cfg, &e) < 0) {
        if (!memchr(e.msg, 0, sizeof e.msg) || !e.msg[0])
            abort(); /* a refusal says why */
        return 0;
    }
    int line, col;
    config_mark_of(cfg, "searchSpace", &line, &col);
    config_mark_of(cfg, "trainingService[0].platform", &line, &col);
    char *shown = config_to_string(cfg);
    free(shown);
    char *json = cJSON_PrintUnformatted(cfg->canonical);
    struct exp_config *back = NULL;
    if (!json || config_from_json(json, &back, &e) < 0) {
        /* accepted at create, refused by the api that runs it */
        fprintf(stderr, "config_from_json refused the canonical config: %s\n%s\n", e.msg, json ? json : "");
        abort();
    }
    config_free(back);
    free(json);
    config_free(cfg);
    return 0;
}

/* fuzz_searchspace.c: the search-space parser (tuners/searchspace.c) on any JSON text,
 * then what the tuners do with a space it accepts: samples, and the first suggestions
 * of Random, GridSearch and TPE (an empty history). */
#include "tests/fuzz/fuzz.h"

#include "tuners/searchspace.h"
#include "tuners/tuner.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    cJSON *j = cJSON_ParseWithLength((const char *)data, size);
    struct ss_space *s = NULL;
    char path[256];
    struct errbuf e;
    if (ss_parse(j, &s, path, sizeof path, &e) == 0) {
        struct rng r;
        rng_init(&r, size, 7);
        for (int i = 0; i < 3; i++)
            cJSON_Delete(ss_sample(s, &r));
        static const char *const names[] = {"Random", "GridSearch", "TPE"};
        cJSON *args = cJSON_CreateObject();
        struct tuner_history hist = {.n = 0, .items = NULL};
        for (size_t t = 0; t < sizeof names / sizeof names[0]; t++) {
            const struct tuner_ops *ops = tuner_find(names[t]);
            void *state = NULL;
            if (!ops || ops->create(args, s, 42, &state, &e) < 0)
                continue;
            for (int64_t k = 0; k < 3; k++) {
                cJSON *p = NULL;
                int rc = ops->suggest(state, k, &hist, &p, &e);
                cJSON_Delete(p);
                if (rc != 1)
                    break;
            }
            ops->destroy(state);
        }
        cJSON_Delete(args);
        ss_free(s);
    }
    cJSON_Delete(j);
    return 0;
}

/* openpai.h: private to the OpenPAI platform (workers/openpai*.c). */
#ifndef TRIALQ_OPENPAI_H
#define TRIALQ_OPENPAI_H

#include <cjson/cJSON.h>

#include "common/common.h"

/* The job protocol as YAML (block style, every string double-quoted). */
void pai_yaml_emit(struct strbuf *sb, const cJSON *v);

/* "8gb", "512mb", "1.5g", or a number of megabytes -> megabytes (ceil). -1 if bad. */
long long pai_size_mb(const cJSON *v);

#endif

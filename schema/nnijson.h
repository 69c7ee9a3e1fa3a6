/* nnijson.h: rows rendered in NNI's REST shapes (ExperimentProfile, TrialJobInfo,
 * MetricDataRecord), shared by the api and nnictl (which reads the database directly). */
#ifndef TRIALQ_NNIJSON_H
#define TRIALQ_NNIJSON_H

#include <cjson/cJSON.h>

#include "schema/schema.h"

/* ExperimentProfile; takes ownership of params (the redacted canonical config). */
cJSON *nni_profile_json(const struct experiment *x, cJSON *params);
/* TrialJobInfo, with finalMetricData for SUCCEEDED trials. */
cJSON *nni_trial_job_json(struct db *db, const struct experiment *x, const struct trial *t);
/* MetricDataRecord from columns col.. = trial_id, parameter_id, type, sequence, value, time.
 * data is double-encoded as NNI's. */
cJSON *nni_metric_record(sqlite3_stmt *st, int col);
/* The parameter record string of a trial, as parameter.cfg and hyperParameters hold it. */
char *nni_param_record(const struct trial *t);

#endif

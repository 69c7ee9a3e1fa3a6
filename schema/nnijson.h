/* nnijson.h: rows rendered in NNI's REST shapes (ExperimentProfile, TrialJobInfo,
 * MetricDataRecord, the .experiment entry, export records), shared by the api and
 * nnictl (which reads the database directly).
 *
 * The list shapes are written as JSON text straight into a buffer: a listing of 100k
 * trials is streamed in chunks and never exists as one tree. The cJSON forms are parsed
 * from that same text, so there is one definition of each shape. */
#ifndef TRIALQ_NNIJSON_H
#define TRIALQ_NNIJSON_H

#include <cjson/cJSON.h>

#include "schema/schema.h"

/* ---- JSON text ---- */
/* A JSON string literal of s (NULL -> null). Invalid UTF-8 becomes U+FFFD, so that a
 * stray byte in a message never makes a whole listing unreadable. */
void nj_str(struct strbuf *sb, const char *s);
void nj_int(struct strbuf *sb, int64_t v);
/* ",\"key\":" (without the comma for the first member; *first is then cleared). */
void nj_key(struct strbuf *sb, int *first, const char *key);

/* ---- shapes ---- */
/* ExperimentProfile; takes ownership of params (the redacted canonical config). */
cJSON *nni_profile_json(const struct experiment *x, cJSON *params);

/* A metric row as the routes select it: see NNI_METRIC_COLUMNS. Strings point into
 * the statement's current row. */
struct nni_metric {
    const char *trial_id, *parameter_id, *type, *value;
    int64_t sequence, time, id;
};
#define NNI_METRIC_COLUMNS "m.trial_id, m.parameter_id, m.type, m.sequence, m.value, m.time, m.id"
void nni_metric_from_row(sqlite3_stmt *st, int col, struct nni_metric *m);
/* MetricDataRecord; data is double-encoded as NNI's. */
void nni_metric_text(struct strbuf *sb, const struct nni_metric *m);
/* The same as cJSON, from columns col.. in NNI_METRIC_COLUMNS order. */
cJSON *nni_metric_record(sqlite3_stmt *st, int col);

/* The parameter record string of a trial, as parameter.cfg and hyperParameters hold it. */
char *nni_param_record(const struct trial *t);

/* TrialJobInfo as text: finalMetricData (from `final`, NULL when none) only for
 * SUCCEEDED trials, stderrPath only for FAILED ones, waitingReason for WAITING ones. */
void nni_trial_job_text(struct strbuf *sb, const struct experiment *x, const struct trial *t,
                        const struct nni_metric *final);
/* The same, looking the FINAL metric up. Returns 0 or -1 (database error). */
int nni_trial_job_write(struct db *db, const struct experiment *x, const struct trial *t, struct strbuf *sb,
                        struct errbuf *e);
cJSON *nni_trial_job_json(struct db *db, const struct experiment *x, const struct trial *t);

/* The experiment's entry of NNI's ~/nni-experiments/.experiment registry, which
 * /experiment-metadata and /experiments-info return. alive: its api process runs. */
cJSON *nni_experiment_entry(const struct experiment *x, int alive);

/* One export-data record {"parameter", "value" (the final metric's JSON text, as a
 * string), "trialJobId"}; the caller closes the object (so that nnictl can append
 * "intermediate"). */
void nni_export_open(struct strbuf *sb, const char *trial_id, const char *parameters, const char *final_json);

/* machines.c: the machines of an experiment's trainingService (local host, remote
 * machineList) with health and GPUs, as a JSON array (GET /machines, nnictl). */
cJSON *machines_json(struct db *db, const struct experiment *x,
                     int (*machines_of)(const char *config_json,
                                        void (*fn)(void *ctx, const char *platform, const char *host, int port,
                                                   const char *user),
                                        void *ctx));

#endif

/* dispatch.h: the rows NNI's dispatcher process is fed from (api/disp_proto.c), read
 * with cursors of its own: metric.id, trial.change_seq and the id of `import` events
 * (import-data). Each reader calls fn once per row, in cursor order, and returns 0, or
 * -1 with e set (the rows given before the error stand: a cursor moved with them). The
 * strings a row points to live until fn returns. */
#ifndef TRIALQ_SCHEMA_DISPATCH_H
#define TRIALQ_SCHEMA_DISPATCH_H

#include "schema/schema.h"

/* Where each cursor stands now: what exists is history, given once in a replay. */
struct disp_cursors {
    int64_t metric, change, import;
};
int disp_cursors_now(struct db *db, const char *exp_id, struct disp_cursors *c, struct errbuf *e);

/* `import` events with after < id <= upto, data the imported records (a JSON array). */
typedef void disp_import_fn(void *arg, int64_t id, const char *data);
int disp_imports(struct db *db, const char *exp_id, int64_t after, int64_t upto, disp_import_fn *fn, void *arg,
                 struct errbuf *e);

/* The trials that SUCCEEDED with a final result, in sequence order (NNI's FD replay). */
typedef void disp_result_fn(void *arg, const char *trial_id, const char *parameters, const char *final_json);
int disp_succeeded(struct db *db, const char *exp_id, disp_result_fn *fn, void *arg, struct errbuf *e);

/* The trials WAITING or RUNNING with a tuner index, in sequence order (NNI's AD replay);
 * label is trial.parameter_label (NULL: the index is the wire id). */
typedef void disp_active_fn(void *arg, int64_t parameter_id, const char *parameters, const char *label);
int disp_active(struct db *db, const char *exp_id, disp_active_fn *fn, void *arg, struct errbuf *e);

/* Trials whose change_seq is above after, at most limit of them. has_index: the trial
 * has a tuner index (parameter_id), else it is -1. */
struct disp_change {
    int64_t change_seq;
    const char *trial_id, *status;
    int has_index;
    int64_t parameter_id;
};
typedef void disp_change_fn(void *arg, const struct disp_change *c);
int disp_changes(struct db *db, const char *exp_id, int64_t after, int limit, disp_change_fn *fn, void *arg,
                 struct errbuf *e);

/* Metrics of the trials' current attempts with id above after, at most limit. */
struct disp_metric {
    int64_t id;
    const char *trial_id, *parameter_id, *type; /* parameter_id: as the trial reported it */
    int64_t sequence;
    const char *value;
};
typedef void disp_metric_fn(void *arg, const struct disp_metric *m);
int disp_metrics(struct db *db, const char *exp_id, int64_t after, int limit, disp_metric_fn *fn, void *arg,
                 struct errbuf *e);

/* The first FINAL of the trial's current attempt: 1 with fn called once, 0 when it has
 * none, -1 on error. */
int disp_final(struct db *db, const char *trial_id, disp_metric_fn *fn, void *arg, struct errbuf *e);

#endif

/* routes.h: the route table (api/routes.c) and the REST handlers it calls
 * (api/routes_*.c). What the handlers share is below it: api/http_util.h (requests,
 * replies, parsing) and api/stream.h (long listings). */
#ifndef TRIALQ_ROUTES_H
#define TRIALQ_ROUTES_H

#include "api/guard.h"
#include "api/http_util.h"
#include "api/stream.h"

/* The route's body limit, and whether it needs the token (guard.h's head_policy), for
 * a request's method and target: guard.c asks before its body is read. */
/* Serves the table on a->http. */
void routes_register(struct api *a);

void routes_head_policy(const struct api *a, enum evhttp_cmd_type m, const char *target, struct head_policy *out);

/* ---- handlers ---- */
/* routes_experiment.c */
void h_version(struct req *q);
void h_check_status(struct req *q);
void h_experiment_get(struct req *q);
void h_experiment_put(struct req *q);
void h_experiment_delete(struct req *q);
void h_experiment_post(struct req *q);
void h_cluster_metadata(struct req *q);
void h_import_data(struct req *q);
void h_imported_data(struct req *q);
void h_experiment_metadata(struct req *q);
void h_experiments_info(struct req *q);
void h_export_data(struct req *q);
/* routes_trials.c */
void h_trial_jobs(struct req *q);
void h_trial_job_get(struct req *q);
void h_trial_job_post(struct req *q);
void h_trial_job_delete(struct req *q);
void h_trial_job_rerun(struct req *q);
void h_job_statistics(struct req *q);
void h_machines(struct req *q);
/* routes_tensorboard.c */
void h_tensorboard_start(struct req *q);
void h_tensorboard_task(struct req *q);
void h_tensorboard_tasks(struct req *q);
/* routes_metrics.c */
void h_metric_data(struct req *q);
void h_metric_data_trial(struct req *q);
void h_metric_data_range(struct req *q);
void h_metric_data_latest(struct req *q);
/* routes_prom.c: GET /metrics (Prometheus) */
void h_metrics(struct req *q);
/* routes_files.c */
void h_trial_file(struct req *q);
/* 0 when trial-file may look for NAME (a route argument, decoded once) in a trial's
 * directory; 400 when it is not a relative path of non-empty components other than "."
 * and ".."; 403 when a component starts with '.' (.nni/ and other hidden files), also
 * in the name decoded again (%252E...) or when further decoding gives a NUL. */
int trial_file_name_status(const char *name);
void h_log_file(struct req *q);

#endif

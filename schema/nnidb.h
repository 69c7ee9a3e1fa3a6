/* nnidb.h: NNI's own database file of an experiment, <exp_dir>/db/nni.sqlite, kept for
 * NNI's client: its `nnictl resume|view` and the Python API's Experiment.resume/view read
 * the config back from the newest ExperimentProfile row (params) before they start the
 * manager. trialq's state stays in trialq.db; this file only mirrors the profile. */
#ifndef TRIALQ_NNIDB_H
#define TRIALQ_NNIDB_H

#include <cjson/cJSON.h>

#include "schema/schema.h"

/* The file of an experiment directory (caller frees). */
char *nnidb_path(const char *exp_dir);
/* The params of the newest ExperimentProfile row: 1 (*out set, caller frees), 0 when the
 * file or the row is not there, -1 on error (e->msg names the file). */
int nnidb_last_params(const char *path, cJSON **out, struct errbuf *e);
/* A new ExperimentProfile row (revision one above the newest, as NNI's manager stores
 * it) with params (taken, freed here; the live values of x are set in it) and x's
 * times; the file and NNI's tables are created when missing. 0 or -1. */
int nnidb_store(const char *path, const struct experiment *x, cJSON *params, struct errbuf *e);

#endif

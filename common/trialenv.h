/* trialenv.h: a trial's environment, built once as a list of name/value pairs and
 * rendered as an envp (the local platform's posix_spawn) or as shell `export` lines
 * (the launch scripts of the remote, OpenPAI and Kubernetes platforms), with
 * common/shell.c's quoting. workers/trial_env.c fills in NNI's variables of a trial;
 * each platform adds its own. */
#ifndef TRIALQ_TRIALENV_H
#define TRIALQ_TRIALENV_H

#include "common/common.h"

struct trial_env_var {
    char *name, *value;
    int word; /* a plain word (a number, a platform name, "false"): written unquoted */
};

struct trial_env {
    struct trial_env_var *v;
    int n, cap;
};

/* NNI's variables that belong to one trial: a trial never inherits them from the
 * process that starts it (they would name another trial). NULL-terminated. */
extern const char *const trial_env_own_names[];

void trial_env_init(struct trial_env *te);
void trial_env_free(struct trial_env *te);
/* Sets name to a copy of value, in the place of an earlier value (else at the end);
 * value NULL removes it (an envp then inherits the variable, if it is not one of
 * trial_env_own_names). */
void trial_env_set(struct trial_env *te, const char *name, const char *value);
/* The same for a value that is a plain word, written without quotes. */
void trial_env_set_word(struct trial_env *te, const char *name, const char *value);
/* The value of name, or NULL. */
const char *trial_env_get(const struct trial_env *te, const char *name);

/* base (an environ) without trial_env_own_names and without the variables te sets,
 * then te's variables in order: a new NULL-terminated array of new strings (free it
 * with trial_env_envp_free). */
char **trial_env_envp(const struct trial_env *te, char *const *base);
void trial_env_envp_free(char **envp);
/* The credentials of the platforms' clouds that the environment of nnictl create may
 * hold (docs/security.md, "What user code inherits"): the processes that run user code
 * here (local trials, a customized tuner's dispatcher, TensorBoard) do not inherit
 * them, unless the config says passCredentials: true. NULL-terminated; beyond these,
 * every AZURE_..._SECRET is one. */
extern const char *const trial_env_credential_names[];
/* Whether the environ entry "NAME=value" is such a credential. */
int trial_env_is_credential(const char *entry);
/* base less its credentials (all of base when pass): a new NULL-terminated array of
 * base's own strings; free the array only. */
char **env_less_credentials(char *const *base, int pass);
/* The same rule for a job script whose environment a scheduler passes on (Slurm's
 * sbatch exports the submitting environment): shell lines that unset those variables. */
void trial_env_unset_credentials_lines(struct strbuf *sb);
/* One line per variable: "export NAME='value'\n" (a word unquoted). */
void trial_env_export_lines(const struct trial_env *te, struct strbuf *sb);
/* All on one line: "export NAME='value' NAME2=word" (no newline). */
void trial_env_export_line(const struct trial_env *te, struct strbuf *sb);

#endif

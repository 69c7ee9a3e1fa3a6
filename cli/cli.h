/* cli.h: nnictl's command table and what its commands share. */
#ifndef TRIALQ_CLI_H
#define TRIALQ_CLI_H

#include <cjson/cJSON.h>
#include <getopt.h>

#include "api/api.h"
#include "schema/exp_ops.h"
#include "schema/schema.h"

int nnictl_main(int argc, char **argv);
int trialq_main(int argc, char **argv);

/* One nnictl command: "create", or a group and sub-command: "experiment list". Its
 * usage, summary and options are the one source of `nnictl ... --help`, the man page
 * (cli/mangen.c) and bash completion (cli/help.c). */
struct cli_cmd {
    const char *group;     /* NULL for top-level commands */
    const char *name;
    const char *usage;
    int (*fn)(int argc, char **argv); /* argv[0] = the command name */
    const char *summary;              /* what it does, one or two sentences */
    const struct option *opts;        /* the getopt_long table fn parses with (NULL: none) */
};
/* Every command, in the order of `nnictl --help`; NULL-terminated (cli/nnictl.c). */
extern const struct cli_cmd *const cli_commands[];
/* The --trial_id and --home options of cli_home_trial_opts; + 1: --home alone. */
extern const struct option cli_opts_trial_home[];

/* The command entries, each defined in the file of its group. */
extern const struct cli_cmd cmd_create, cmd_resume, cmd_view, cmd_stop;
extern const struct cli_cmd cmd_experiment_list, cmd_experiment_show, cmd_experiment_status;
extern const struct cli_cmd cmd_experiment_delete, cmd_experiment_secrets, cmd_experiment_importance;
extern const struct cli_cmd cmd_trial_ls, cmd_trial_kill;
extern const struct cli_cmd cmd_update_searchspace, cmd_update_concurrency, cmd_update_duration, cmd_update_trialnum;
extern const struct cli_cmd cmd_top, cmd_experiment_export, cmd_experiment_import;
extern const struct cli_cmd cmd_log_stdout, cmd_log_stderr, cmd_log_trial;
extern const struct cli_cmd cmd_experiment_machines;
extern const struct cli_cmd cmd_webui_url, cmd_config_show, cmd_platform_clean, cmd_trial_rerun;
extern const struct cli_cmd cmd_experiment_save, cmd_experiment_load;
extern const struct cli_cmd cmd_algo_list, cmd_algo_show, cmd_algo_register, cmd_algo_reg;
extern const struct cli_cmd cmd_algo_unregister, cmd_algo_unreg;
extern const struct cli_cmd cmd_launcher_path, cmd_launcher_install;

/* ---- pycheck.c: the configured python and the classes it can load ---- */
/* $TRIALQ_PYTHON, else python3: the interpreter the dispatcher process runs. */
const char *py_interpreter(void);
/* Whether that python finds module.Class cls, within $TRIALQ_IMPORT_TIMEOUT seconds
 * (60): import 0: importlib.util.find_spec of the module, code_dir (may be NULL)
 * appended to sys.path as NNI appends codeDirectory; import 1: the module imported and
 * the class got (its libraries must be there too). 0, or -1 with why (the traceback's
 * last line, "no answer in 60 s"). */
int py_class_check(const char *cls, const char *code_dir, int import, char *why, size_t len);

/* ---- shared helpers (cli/common.c) ---- */
/* Opens the database of the home (--home / $NNI_HOME / ~/nni-experiments), and only
 * that (the schema's own migrations are db_open's). */
struct db *cli_open_db(const char *home_opt, char **home_out);
/* The home as a command uses it: cli_open_db, then the one-time step that brings up to
 * date what an older trialq left in it (cli_secrets_migrate: done once per home,
 * marked by secrets/.moved). Every nnictl command that opens the database opens it so. */
struct db *cli_open_home(const char *home_opt, char **home_out);
/* Prints "ERROR: ..." to stderr and returns 1. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* From now on the first cli_error's message goes into buf (n bytes) instead of stderr;
 * n == 0 ends that (the api's create from NNI's launcher answers it in a 400). */
void cli_error_capture(char *buf, size_t n);
/* `trialq api --action create` for an id without a row (NNI's launcher): the config it
 * POSTs checked as nnictl create checks a file, then the row (api.h, api_create_fn). */
int cli_create_posted(struct db *db, const struct api_create_req *r, char *msg, size_t n);

/* ---- secrets.c: secret config values outside the database (common/secrets.h) ---- */
/* Takes the secrets out of canonical (in place: placeholders) into the experiment's
 * secrets file. 0, or -1 with e set. */
int cli_secrets_take_out(const char *home, const char *exp_id, cJSON *canonical, struct errbuf *e);
/* Once per home (secrets/.moved): moves the secrets of the rows that a trialq before
 * this change stored out of the database. 0, or -1 (said). */
int cli_secrets_migrate(struct db *db, const char *home);
/* The home of an open database (the folder of trialq.db). Caller frees. */
char *cli_db_home(const struct db *db);
/* Removes secrets files that no experiment row owns (a create killed in between). */
int cli_secrets_sweep(struct db *db, const char *home);
/* An integer option's value: the whole of s, within [min, max]; else prints argparse's
 * kind of message naming opt and returns 1. */
int cli_int_arg(const char *opt, const char *s, int min, int max, int *out);
/* Options of the commands that take [ID] [--home H] (and [--trial_id/-T T] when
 * trial_id is not NULL): 0, or 1 after a usage error naming cmd's usage. The ID is
 * argv[optind] afterwards, when optind < argc. */
int cli_home_trial_opts(int argc, char **argv, const struct cli_cmd *cmd, const char **home, const char **trial_id);
/* 1 when the experiment's api process runs. */
int cli_api_alive(const struct experiment *x);
/* 1 when nothing listens on addr:port (and so we could bind it); addr NULL = 127.0.0.1. */
int cli_port_free(const char *addr, int port);
/* "Web portal URLs: ..." for an api on bind:port under prefix (NULL or "/p"). */
void cli_print_urls(const char *bind, int port, const char *prefix, const char *manager_ip);
/* 0 when addr is a numeric IPv4/IPv6 address or "localhost"; else prints why, 1. */
int cli_check_bind(const char *addr);
/* "/a/b" from a --url_prefix argument ("a/b", "/a/b/"), or NULL after printing why. */
char *cli_url_prefix(const char *arg);
/* Starts `trialq api` for the experiment: detached (new session, output to the
 * experiment's log dir) or in the foreground as our child. Waits until it answers
 * /check-status. Returns its pid or -1 (message printed). */
pid_t cli_start_api(const char *home, const struct experiment *x, const char *action, int port, int detach,
                    const char *log_level);
/* HTTP GET/PUT/POST/DELETE on the experiment's api: on its bind address (a wildcard
 * bind on loopback), x->port and x->url_prefix, with its token; path is under
 * /api/v1/nni. Timeouts on every step. Returns the status code or -1; *body
 * (optional) receives the response body. */
int cli_http(const struct experiment *x, const char *method, const char *path, const char *req_body, char **body);
/* Which experiments `nnictl stop` takes when it is not given one id (that one is
 * exp_resolve's): --all every one with a live api or not finished (a crash left it
 * half-stopped), --port P the running one on P, "ID*" the running ones whose id starts
 * with ID, nothing the running ones. */
struct stop_sel {
    int all;
    int port;
    const char *prefix; /* "ID*": ID, prefix_len bytes of it */
    size_t prefix_len;
};
int cli_stop_selects(const struct stop_sel *s, const struct experiment *x, int alive);
/* Stops one experiment: idempotent; every recorded process is gone when it returns. */
int cli_stop_experiment(struct db *db, const char *home, const char *id, int quiet);
/* Runs `trialq worker --drain` for an experiment whose api is gone. */
int cli_drain(const char *home, const char *exp_id, const char *platform);
/* ---- talking to a running experiment (cli/rest.c) ---- */
struct cli_target {
    struct db *db;
    char *home;
    char *id;
    struct experiment x;
    int loaded;
};
/* Opens the database and resolves id_arg (NULL: the only running experiment). With
 * need_running, its api must run and answer /check-status. Prints what is wrong
 * (unknown id, not running, no answer on its port) and returns 1; 0 when ready. */
int cli_target_open(struct cli_target *t, const char *home_opt, const char *id_arg, int need_running);
void cli_target_close(struct cli_target *t);
/* A message for a failed REST call: the api's {"error"} or the status. Caller frees. */
char *cli_error_of(int code, const char *body);
/* Python's json.dumps(j, indent=4): config show, experiment machines */
void cli_print_indent4(const cJSON *j);
/* json.dumps(j, indent=4, sort_keys=True, separators=(',', ':')): how NNI's nnictl
 * prints trial ls, experiment show and experiment status */
void cli_print_nni(const cJSON *j);
/* startTime and endTime of j, numbers of ms, as NNI's nnictl prints them: local
 * "YYYY/MM/DD HH:MM:SS" */
void cli_nni_times(cJSON *j);

/* Progress line and best trial, for --foreground. */
void cli_print_progress(struct db *db, const char *id);
void cli_print_best(struct db *db, const char *id);

#endif

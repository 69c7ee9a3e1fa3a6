/* log.c: nnictl log stdout | stderr (the api's output files of the experiment, whole
 * or --head/--tail lines) and log trial (each trial's log directory). From the
 * database and the files: they work whether or not the experiment runs. */
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* Prints the first or last n lines of text (n <= 0: all). */
static void print_lines(const char *s, size_t len, long head, long tail)
{
    const char *from = s, *to = s + len;
    if (head > 0) {
        const char *p = s;
        for (long i = 0; i < head && p < to; i++) {
            const char *nl = memchr(p, '\n', (size_t)(to - p));
            p = nl ? nl + 1 : to;
        }
        to = p;
    } else if (tail > 0) {
        const char *p = to;
        if (p > s && p[-1] == '\n')
            p--; /* the final newline ends the last line, it does not start one */
        long n = 0;
        while (p > s) {
            if (p[-1] == '\n' && ++n == tail)
                break;
            p--;
        }
        from = p;
    }
    fwrite(from, 1, (size_t)(to - from), stdout);
    if (to > from && to[-1] != '\n')
        putchar('\n');
}

static const struct option log_opts[] = {
    {"tail", required_argument, NULL, 'T'}, {"head", required_argument, NULL, 'H'},
    {"path", no_argument, NULL, 'p'},       {"home", required_argument, NULL, 'o'},
    {NULL, 0, NULL, 0},
};
static int log_file(int argc, char **argv, const char *file, const struct cli_cmd *cmd)
{
    /* NNI's short options: -T tail, -H head (so --home has no short form here) */
    const char *home_opt = NULL;
    int head = 0, tail = 0;
    int path_only = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "T:H:p", log_opts, NULL)) != -1) {
        switch (c) {
        case 'T': if (cli_int_arg("--tail", optarg, 0, INT_MAX, &tail)) return 1; break;
        case 'H': if (cli_int_arg("--head", optarg, 0, INT_MAX, &head)) return 1; break;
        case 'p': path_only = 1; break;
        case 'o': home_opt = optarg; break;
        default: return cli_error("usage: %s", cmd->usage);
        }
    }
    if (head && tail)
        return cli_error("argument --tail: not allowed with argument --head");
    struct cli_target t;
    if (cli_target_open(&t, home_opt, optind < argc ? argv[optind] : NULL, 0) != 0)
        return 1;
    char *path = xasprintf("%s/log/%s", t.x.exp_dir, file);
    int rc = 0;
    if (path_only) {
        printf("%s\n", path);
    } else {
        size_t len;
        char *s = read_file(path, &len);
        if (!s)
            rc = cli_error("experiment %s has no %s yet (%s)", t.id, file, path);
        else
            print_lines(s, len, head, tail);
        free(s);
    }
    free(path);
    cli_target_close(&t);
    return rc;
}

static int cmd_stdout_fn(int argc, char **argv)
{
    return log_file(argc, argv, "nnictl_stdout.log", &cmd_log_stdout);
}

static int cmd_stderr_fn(int argc, char **argv)
{
    return log_file(argc, argv, "nnictl_stderr.log", &cmd_log_stderr);
}

static int cmd_trial_fn(int argc, char **argv)
{
    const char *home_opt = NULL, *trial_id = NULL;
    if (cli_home_trial_opts(argc, argv, &cmd_log_trial, &home_opt, &trial_id))
        return 1;
    struct cli_target t;
    if (cli_target_open(&t, home_opt, optind < argc ? argv[optind] : NULL, 0) != 0)
        return 1;
    struct errbuf e;
    struct id_list l;
    int rc = trials_dirs(t.db, t.id, trial_id, &l, &e) < 0 ? cli_error("%s", e.msg) : 0;
    int n = rc ? 0 : l.n;
    if (!trial_id)
        printf("All of trial log info:\n");
    for (int i = 0; i < n; i++) {
        char *dir = l.dirs[i] ? xstrdup(l.dirs[i]) : trial_dir_default(t.x.exp_dir, l.ids[i]);
        /* trialq: and the tracking URL where the platform has one (DLC's console page) */
        char *url = NULL;
        if (trial_url(t.db, l.ids[i], &url, &e) < 0)
            url = NULL;
        printf("id:%s path:%s%s%s\n", l.ids[i], dir, url ? " url:" : "", url ? url : "");
        free(url);
        free(dir);
    }
    if (!rc)
        id_list_free(&l);
    if (!rc && !n) {
        if (trial_id)
            rc = cli_error("Trial id %s not correct, please check your command!", trial_id);
        else
            printf("None\n");
    }
    cli_target_close(&t);
    return rc;
}

const struct cli_cmd cmd_log_stdout = {
    "log", "stdout", "nnictl log stdout [ID] [--head N | --tail N] [--path]", cmd_stdout_fn,
    "Prints the experiment's api output log, whole or its first or last N lines; --path "
    "prints where it is.",
    log_opts};
const struct cli_cmd cmd_log_stderr = {
    "log", "stderr", "nnictl log stderr [ID] [--head N | --tail N] [--path]", cmd_stderr_fn,
    "Prints the experiment's api error log, whole or its first or last N lines; --path prints "
    "where it is.",
    log_opts};
const struct cli_cmd cmd_log_trial = {
    "log", "trial", "nnictl log trial [ID] [--trial_id TRIAL]", cmd_trial_fn,
    "Prints the log directory of each trial (or of one).",
    cli_opts_trial_home};

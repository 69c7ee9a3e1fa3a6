/* top.c: nnictl top [--time SEC] [--once]: every running experiment and its trials,
 * redrawn every SEC seconds (NNI's monitor), read from the database. --once prints
 * one screen and exits (scripts, tests). */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

#define RULE "-------------------------------------------------------------------------------------"

static volatile sig_atomic_t g_stop;
static void on_int(int sig) { (void)sig; g_stop = 1; }

static void fmt_ms(int64_t ms, char *out, size_t n)
{
    if (ms <= 0)
        snprintf(out, n, "None");
    else
        format_time_ms(ms, "%Y/%m/%d %H:%M:%S", out, n);
}

static void print_experiment(struct db *db, const struct experiment *x)
{
    char start[32];
    format_time_ms(x->start_time, "%Y-%m-%d %H:%M:%S", start, sizeof start);
    int64_t secs = ((x->end_time ? x->end_time : now_ms()) - x->start_time) / 1000;
    if (secs < 0)
        secs = 0;
    printf("Id: %s    Status: %s    Port: %d    Platform: %s    \nStartTime: %s    Duration: %lldd %lldh %lldm %llds\n",
           x->id, x->status, x->port, x->platform, start, (long long)(secs / 86400), (long long)(secs % 86400 / 3600),
           (long long)(secs % 3600 / 60), (long long)(secs % 60));
    printf(RULE "\n%-15s %-25s %-25s %-15s \n" RULE "\n", "trialId", "startTime", "endTime", "status");
    struct errbuf e;
    struct trial *ts;
    int n;
    trials_all(db, x->id, &ts, &n, &e);
    for (int i = 0; i < n; i++) {
        char t0[32], t1[32];
        fmt_ms(ts[i].start_time ? ts[i].start_time : ts[i].submit_time, t0, sizeof t0);
        fmt_ms(ts[i].end_time, t1, sizeof t1);
        printf("%-15s %-25s %-25s %-15s\n", ts[i].id, t0, t1, ts[i].status);
        trial_clear(&ts[i]);
    }
    free(ts);
    printf(RULE "\n\n\n");
}

/* One screen. Returns how many experiments run. */
static int print_screen(struct db *db)
{
    struct errbuf e;
    struct id_list l = {0};
    exp_ids(db, 1, &l, &e);
    char **ids = l.ids;
    int n = l.n, shown = 0;
    for (int i = 0; i < n; i++) {
        struct experiment x;
        if (exp_load(db, ids[i], &x, &e) == 1) {
            if (cli_api_alive(&x)) {
                print_experiment(db, &x);
                shown++;
            }
            exp_clear(&x);
        }
        free(ids[i]);
    }
    free(ids);
    if (!shown)
        printf("There is no experiment running...\n");
    fflush(stdout);
    return shown;
}

static const struct option top_opts[] = {
    {"time", required_argument, NULL, 't'}, {"once", no_argument, NULL, 'o'},
    {"home", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0},
};
static int cmd_top_fn(int argc, char **argv)
{
    const char *home_opt = NULL;
    int interval = 3, once = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "t:oH:", top_opts, NULL)) != -1) {
        switch (c) {
        case 't': if (cli_int_arg("--time", optarg, INT_MIN, INT_MAX, &interval)) return 1; break;
        case 'o': once = 1; break;
        case 'H': home_opt = optarg; break;
        default: return cli_error("usage: %s", cmd_top.usage);
        }
    }
    if (interval <= 0)
        return cli_error("please input a positive integer as time interval, the unit is second.");
    struct db *db = cli_open_home(home_opt, NULL);
    if (!db)
        return 1;
    signal(SIGINT, on_int);
    signal(SIGTERM, on_int);
    int tty = isatty(1);
    while (!g_stop) {
        if (tty && !once)
            fputs("\033[H\033[2J", stdout); /* NNI clears the screen each time */
        print_screen(db);
        if (once)
            break;
        /* one print per interval; a signal ends the wait at once */
        struct timespec ts = {interval, 0};
        while (!g_stop && nanosleep(&ts, &ts) < 0)
            ;
    }
    if (g_stop && !once)
        printf("Exiting...\n");
    db_close(db);
    return 0;
}

const struct cli_cmd cmd_top = {
    NULL, "top", "nnictl top [--time SEC] [--once]", cmd_top_fn,
    "Shows every running experiment and its trials, redrawn every --time seconds; --once "
    "prints one screen.",
    top_opts};

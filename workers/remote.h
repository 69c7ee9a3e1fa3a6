/* remote.h: internals of the remote (SSH) platform shared by its files. */
#ifndef TRIALQ_REMOTE_H
#define TRIALQ_REMOTE_H

/* The POSIX sh runner shipped to every machine (remote_runner.c). */
extern const char remote_runner_sh[];

/* One trial's header line of the runner's tq_status answer: "<state> <rc> <end>
 * <stopped> <n1> <n2> <n3>" (the runner's state of the attempt: R running, F finished,
 * V vanished, N never submitted; n: new bytes of .nni/metrics, trial.stdout,
 * trial.stderr that follow in the data part). */
struct remote_status {
    char state;
    int rc, stopped;
    long long end, len[3];
};
/* Parses a tq_status answer for n trials, p..end NUL-terminated at end: "status\n", n
 * header lines into h[0..n), "data\n". Returns where the data begins, NULL when the
 * answer is malformed. The lengths are the runner's word: checked against the data by
 * the caller. */
const char *remote_status_parse(const char *p, const char *end, int n, struct remote_status *h);

#endif

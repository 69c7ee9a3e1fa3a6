/* lead.h: the trial's group leader (supervise/lead.c) and the end record both it and the
 * supervisor write. */
#ifndef TRIALQ_SUPERVISE_LEAD_H
#define TRIALQ_SUPERVISE_LEAD_H

#include <signal.h>
#include <stdint.h>

#define KILL_GRACE_SECONDS 5
/* Once a stop came, a record of the trial (its end, its job) that the disk refuses is
 * given up after this long: a stop ends the trial's processes whatever the disk says,
 * and the next healthy stop or resume records what is missing (docs/operations.md). */
#define STOP_RECORD_GIVE_UP_SECONDS 2
/* The room of the end record, taken before the trial runs (.nni/state.next, blanks):
 * a full disk at the end still takes the record, written over it in place and renamed
 * to .nni/state. */
#define STATE_RESERVE_LEN 96

/* Blocks SIGTERM, SIGINT, SIGHUP, SIGALRM and SIGCHLD, which are then taken only inside
 * sigsuspend(waiting) (none is missed between a look at the flags and the wait): the
 * first three call stop, SIGALRM alarm_, SIGCHLD only wakes the wait. */
void catch_stop_signals(void (*stop)(int), void (*alarm_)(int), sigset_t *waiting);
/* In a child before exec: default dispositions, no signal blocked. */
void default_signals(void);
/* A wait status as the end record has it: exit code (128 + signal when killed), signal. */
void exit_of(int status, int *code, int *sig);
/* ENOSPC, EDQUOT, EIO, EROFS: a write of the trial's records that is waited out. */
int trial_write_fault(int err);
/* A write of the trial's records retried while its filesystem is full, read-only or
 * failing. Zero it, set what (said in the messages) and stopped (a stop came already). */
struct record_retry {
    const char *what;
    int said;
    int stopped;        /* a stop came: give up at give_up_at */
    int64_t give_up_at; /* mono ms */
    int fault;          /* the errno of the first fault met */
};
/* After a failed write (errno err): 1 to try again, having waited up to 1 s (a stop,
 * SIGTERM, SIGINT or SIGHUP, taken meanwhile sets r->stopped); 0 to give up: err is not
 * a fault, or a stop came STOP_RECORD_GIVE_UP_SECONDS ago. Each said once on stderr. */
int record_retry(struct record_retry *r, int err);
/* Creates DIR/.nni/state.next, STATE_RESERVE_LEN blanks: 0, or -1 with errno. */
int trial_state_reserve(const char *dir);
/* Writes DIR/.nni/state = "<exit code> <end ms> <signal> <attempt> <stopped> <fault>"
 * atomically (fault: the errno of a full, read-only or failing filesystem seen under DIR
 * while the trial ran, else 0; one met by this write is recorded too). On a full disk it
 * is written over the reserved .nni/state.next; failing that, waited out (record_retry:
 * given up once a stop came). 0 when written, -1 when not. */
int trial_state_write(const char *dir, int code, int64_t end, int sig, int attempt, int stopped, int fault);
/* 1 when DIR/.nni/state records an end of this attempt. */
int trial_state_of(const char *dir, int attempt);
/* Runs in the supervisor's child, already the leader of the trial's own process group,
 * with the trial's stdio and working directory: runs COMMAND with SHELL -c as its child,
 * records its end, then ends the whole group (itself included). Never returns. */
void trial_lead(const char *dir, int attempt, const char *shell, const char *command) __attribute__((noreturn));

#endif

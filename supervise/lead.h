/* lead.h: the trial's group leader (supervise/lead.c) and the end record both it and the
 * supervisor write. */
#ifndef TRIALQ_SUPERVISE_LEAD_H
#define TRIALQ_SUPERVISE_LEAD_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#define KILL_GRACE_SECONDS 5
/* Once a stop came, a record of the trial (its end, its job) that the disk refuses is
 * given up after this long: a stop ends the trial's processes whatever the disk says,
 * and the next healthy stop or resume records what is missing (docs/operations.md). */
#define STOP_RECORD_GIVE_UP_SECONDS 2
/* The room of the end record, taken before the trial runs (.nni/state.next, blanks):
 * a full disk at the end still takes the record, written over it in place and renamed
 * to .nni/state. */
#define STATE_RESERVE_LEN 96

/* The value (sigqueue) of the stop signals that `nnictl stop` sends a trial's supervisor
 * or group leader itself, from the platform's files (the local platform's host_job), when
 * the database refused the stop (a full, read-only or failing disk): the trial's end
 * record then says that the experiment's stop ended it (<stopped> STOPPED_EXPERIMENT),
 * and the next worker records it USER_CANCELED, as that stop would have, with or
 * without a kill request in the database (a resume has none). The supervisor passes it
 * on to the leader, which writes the record. Any other stop signal (the worker's, for a
 * kill request the database holds) is a plain stop. */
#define STOP_SIGVAL_EXPERIMENT 0x74715354
/* The end record's <stopped>: no stop reached the trial before it ended; a stop did (the
 * kill request in the database names the end); the experiment's stop did (above). */
enum { STOPPED_NOT = 0, STOPPED_KILL = 1, STOPPED_EXPERIMENT = 2 };

/* Blocks SIGTERM, SIGINT, SIGHUP, SIGALRM and SIGCHLD, which are then taken only inside
 * sigsuspend(waiting) (none is missed between a look at the flags and the wait): the
 * first three call stop (one that carries STOP_SIGVAL_EXPERIMENT is noted first: see
 * stop_group, trial_state_write), SIGALRM alarm_, SIGCHLD only wakes the wait. */
void catch_stop_signals(void (*stop)(int), void (*alarm_)(int), sigset_t *waiting);
/* Passes a stop on to the trial's process group, leader lead (SIGINT): the experiment's
 * stop, when it was that, reaches the leader first with STOP_SIGVAL_EXPERIMENT. */
void stop_group(pid_t lead);
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
 * atomically (stopped: non-zero when a stop reached the trial before it ended, written
 * STOPPED_EXPERIMENT when one of the stop signals this process took was the experiment's,
 * else STOPPED_KILL; fault: the errno of a full, read-only or failing filesystem seen
 * under DIR while the trial ran, else 0; one met by this write is recorded too). On a
 * full disk it is written over the reserved .nni/state.next; failing that, waited out
 * (record_retry: given up once a stop came). 0 when written, -1 when not. */
int trial_state_write(const char *dir, int code, int64_t end, int sig, int attempt, int stopped, int fault);
/* 1 when DIR/.nni/state records an end of this attempt. */
int trial_state_of(const char *dir, int attempt);
/* Runs in the supervisor's child, already the leader of the trial's own process group,
 * with the trial's stdio and working directory: runs COMMAND with SHELL -c as its child,
 * records its end, then ends the whole group (itself included). Never returns. */
void trial_lead(const char *dir, int attempt, const char *shell, const char *command) __attribute__((noreturn));

#endif

/* lead.h: the trial's group leader (supervise/lead.c) and the end record both it and the
 * supervisor write. */
#ifndef TRIALQ_SUPERVISE_LEAD_H
#define TRIALQ_SUPERVISE_LEAD_H

#include <signal.h>
#include <stdint.h>

#define KILL_GRACE_SECONDS 5

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
/* Writes DIR/.nni/state = "<exit code> <end ms> <signal> <attempt> <stopped>" atomically;
 * on a full disk, an I/O error or a read-only filesystem it waits until it can. */
void trial_state_write(const char *dir, int code, int64_t end, int sig, int attempt, int stopped);
/* 1 when DIR/.nni/state records an end of this attempt. */
int trial_state_of(const char *dir, int attempt);
/* Runs in the supervisor's child, already the leader of the trial's own process group,
 * with the trial's stdio and working directory: runs COMMAND with SHELL -c as its child,
 * records its end, then ends the whole group (itself included). Never returns. */
void trial_lead(const char *dir, int attempt, const char *shell, const char *command) __attribute__((noreturn));

#endif

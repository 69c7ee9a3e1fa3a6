/* trial_status.h: NNI's trial statuses, defined once. C code asks trial_status_final()
 * and friends; SQL that lists the final ones uses SQL_TRIAL_FINAL, generated from the
 * same list at compile time, so a status added here reaches every query. */
#ifndef TRIALQ_TRIAL_STATUS_H
#define TRIALQ_TRIAL_STATUS_H

#include <stddef.h>

/* The statuses a trial ends in (it never leaves them). X(name) per status, SEP() between
 * (SEP a function-like macro, so that it passes through the nested list unexpanded). */
#define TRIAL_FINAL_STATUSES(X, SEP) \
    X(SUCCEEDED) SEP() X(FAILED) SEP() X(USER_CANCELED) SEP() X(SYS_CANCELED) SEP() X(EARLY_STOPPED)
/* The statuses of a trial that has not ended: queued, running. */
#define TRIAL_ACTIVE_STATUSES(X, SEP) X(WAITING) SEP() X(RUNNING)
/* Every status, in NNI's order: queued, running, the final ones, and UNKNOWN (a value the
 * database holds that this build does not know). */
#define TRIAL_ALL_STATUSES(X, SEP) TRIAL_ACTIVE_STATUSES(X, SEP) SEP() TRIAL_FINAL_STATUSES(X, SEP) SEP() X(UNKNOWN)

#define TRIAL_STATUS_SQLQ_(s) "'" #s "'"
#define TRIAL_STATUS_SQLSEP_() ","
#define TRIAL_STATUS_COMMA_() ,
#define TRIAL_STATUS_STR_(s) #s
#define TRIAL_STATUS_SEP_() ", "
/* "('SUCCEEDED','FAILED',...)": for "status IN " SQL_TRIAL_FINAL; _LIST without the parentheses */
#define SQL_TRIAL_FINAL_LIST TRIAL_FINAL_STATUSES(TRIAL_STATUS_SQLQ_, TRIAL_STATUS_SQLSEP_)
#define SQL_TRIAL_FINAL "(" SQL_TRIAL_FINAL_LIST ")"
/* "('WAITING','RUNNING')": for "status IN " SQL_TRIAL_ACTIVE */
#define SQL_TRIAL_ACTIVE "(" TRIAL_ACTIVE_STATUSES(TRIAL_STATUS_SQLQ_, TRIAL_STATUS_SQLSEP_) ")"
/* "SUCCEEDED, FAILED, ...": the final statuses for a message */
#define TRIAL_FINAL_WORDS TRIAL_FINAL_STATUSES(TRIAL_STATUS_STR_, TRIAL_STATUS_SEP_)
/* "WAITING, RUNNING, SUCCEEDED, ..., EARLY_STOPPED": the statuses one may ask for */
#define TRIAL_STATUS_WORDS "WAITING, RUNNING, " TRIAL_FINAL_WORDS

/* trial_statuses[i] for i < TRIAL_NSTATUS: every status, in the order above. */
extern const char *const trial_statuses[];
#define TRIAL_NSTATUS 8

/* 1 for a final status, 0 otherwise (NULL included). */
int trial_status_final(const char *s);
/* The index in trial_statuses of the status spelled by s[0..len) (UNKNOWN included),
 * or -1. */
int trial_status_find(const char *s, size_t len);
/* The static copy of a status (UNKNOWN for anything else, NULL included). */
const char *trial_status_intern(const char *s);

#endif

/* remote.h: internals of the remote (SSH) platform shared by its files. */
#ifndef TRIALQ_REMOTE_H
#define TRIALQ_REMOTE_H

/* The POSIX sh runner shipped to every machine (remote_runner.c). */
extern const char remote_runner_sh[];

#endif

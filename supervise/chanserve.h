/* chanserve.h: NNI v3's HTTP trial command channel for one trial, served by its group
 * leader (supervise/chanserve.c, supervise/lead.c). The leader polls the descriptors
 * this gives and hands back what poll found. */
#ifndef TRIALQ_CHANSERVE_H
#define TRIALQ_CHANSERVE_H

#include <poll.h>
#include <stddef.h>

#define CHANSERVE_MAX_FDS 33 /* the listener and 32 connections */

struct chanserve;

/* Listens on 127.0.0.1 (a port of the kernel's choice) for PATH, the channel of trial
 * TRIAL_ID whose files are in DIR, and writes the URL to DIR/.nni/channel. NULL with
 * err filled when it cannot. */
struct chanserve *chanserve_open(const char *dir, const char *trial_id, const char *path, char *err,
                                 size_t errlen);
/* http://127.0.0.1:<port><path>: what the trial gets in NNI_TRIAL_COMMAND_CHANNEL. */
const char *chanserve_url(const struct chanserve *cs);
/* Fills fds (room for CHANSERVE_MAX_FDS) with what to wait for; returns how many, and in
 * *timeout_ms how long at most to wait (-1: no limit). */
int chanserve_pollfds(struct chanserve *cs, struct pollfd *fds, int *timeout_ms);
/* Serves what poll found on fds[0..n) (revents all 0 after a signal) and what is due. */
void chanserve_run(struct chanserve *cs, const struct pollfd *fds, int n);
/* A stop reached the trial: polls are answered 410 (channel closed); metrics are still
 * stored. */
void chanserve_closing(struct chanserve *cs);
/* Answers what waits with 410, closes everything, removes DIR/.nni/channel. */
void chanserve_close(struct chanserve *cs);

#endif

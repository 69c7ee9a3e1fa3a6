/* job_listing.h: the last listing of an experiment's jobs, kept by a platform's batched
 * poll (platform_ops.poll_all) for its per-trial poll to answer from: entries by job
 * name, found by binary search. Internal to workers/. */
#ifndef TRIALQ_JOB_LISTING_H
#define TRIALQ_JOB_LISTING_H

#include <cjson/cJSON.h>

struct job_listed {
    char *name;
    cJSON *entry; /* what the platform keeps of the job */
};

struct job_listing {
    struct job_listed *v;
    int n, cap;
    int complete; /* job_listing_seal ran: every job of the experiment is in it */
};

/* Empties it (not complete), freeing what it held. */
void job_listing_reset(struct job_listing *l);
/* Adds a job (entry is taken over; name is copied). */
void job_listing_add(struct job_listing *l, const char *name, cJSON *entry);
/* The listing is whole: sorts it by name and marks it complete. */
void job_listing_seal(struct job_listing *l);
/* The entry of the job named name, or NULL (also while the listing is not complete). */
const cJSON *job_listing_find(const struct job_listing *l, const char *name);

#endif

/* trial_status.c: the statuses of trial_status.h. */
#include "common/trial_status.h"

#include <string.h>

const char *const trial_statuses[] = {TRIAL_ALL_STATUSES(TRIAL_STATUS_STR_, TRIAL_STATUS_COMMA_)};
_Static_assert(sizeof trial_statuses / sizeof trial_statuses[0] == TRIAL_NSTATUS, "TRIAL_NSTATUS");

int trial_status_final(const char *s)
{
    static const char *const finals[] = {TRIAL_FINAL_STATUSES(TRIAL_STATUS_STR_, TRIAL_STATUS_COMMA_)};
    for (size_t i = 0; s && i < sizeof finals / sizeof finals[0]; i++)
        if (strcmp(s, finals[i]) == 0)
            return 1;
    return 0;
}

int trial_status_find(const char *s, size_t len)
{
    for (int i = 0; s && i < TRIAL_NSTATUS; i++)
        if (strlen(trial_statuses[i]) == len && strncmp(s, trial_statuses[i], len) == 0)
            return i;
    return -1;
}

const char *trial_status_intern(const char *s)
{
    int i = s ? trial_status_find(s, strlen(s)) : -1;
    return trial_statuses[i < 0 ? TRIAL_NSTATUS - 1 : i];
}

/* exp_api.c: the experiment row as its api process holds it (schema/exp_api.h). */
#include <stdlib.h>

#include "schema/exp_api.h"

int exp_desired_status(struct db *db, const char *id, char **out, struct errbuf *e)
{
    *out = NULL;
    return db_text(db, e, out, "SELECT desired_status FROM experiment WHERE id = ?", "s", id);
}

int exp_set_port(struct db *db, const char *id, int port, struct errbuf *e)
{
    return db_run(db, e, "UPDATE experiment SET port = ? WHERE id = ?", "ds", port, id) < 0 ? -1 : 0;
}

int exp_api_take(struct db *db, const char *id, int pid, uint64_t pid_start, int64_t now, int keep_end_time,
                 struct errbuf *e)
{
    return db_run(db, e, "UPDATE experiment SET api_pid = ?, api_start = ?, api_heartbeat = ?,"
                         " desired_status = NULL, end_time = CASE WHEN ? THEN end_time END WHERE id = ?",
                  "diiis", pid, (int64_t)pid_start, now, (int64_t)(keep_end_time != 0), id) < 0 ? -1 : 0;
}

int exp_api_release(struct db *db, const char *id, int pid, struct errbuf *e)
{
    return db_run(db, e, "UPDATE experiment SET api_pid = NULL, api_start = NULL WHERE id = ? AND api_pid = ?", "sd",
                  id, pid) < 0 ? -1 : 0;
}

int exp_tuner_revive(struct db *db, const char *id, struct errbuf *e)
{
    return db_run(db, e, "UPDATE experiment SET tuner_exhausted = 0 WHERE id = ?", "s", id) < 0 ? -1 : 0;
}

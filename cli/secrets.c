/* secrets.c: nnictl's side of the secrets kept outside the database (common/secrets.h):
 * taking them out of a config before it is stored, moving them out of the rows of a
 * database written before (at its first open by this nnictl), removing what a killed
 * create left. docs/security.md, "Secrets outside the database". */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/secrets.h"
#include "config/config.h"

int cli_secrets_take_out(const char *home, const char *exp_id, cJSON *canonical, struct errbuf *e)
{
    cJSON *list = config_secrets_split(canonical);
    int rc = cJSON_GetArraySize(list) > 0 ? secrets_store(home, exp_id, list, e) : 0;
    cJSON_Delete(list);
    return rc;
}

/* Moves the secrets of one stored row out: the file first, then the row (a crash
 * between leaves the row as it was, and the next open does it again). Counts the rows
 * changed in *moved. */
static int migrate_row(struct db *db, const char *home, const struct exp_config_row *r, int *moved,
                       struct errbuf *e)
{
    cJSON *cfg = cJSON_Parse(r->config);
    if (!cfg)
        return 0; /* not ours to judge here */
    cJSON *list = config_secrets_split(cfg);
    int rc = 0;
    if (cJSON_GetArraySize(list) > 0) {
        char *text = cJSON_PrintUnformatted(cfg);
        rc = secrets_store(home, r->id, list, e);
        if (rc == 0)
            rc = exp_config_replace(db, r->id, r->config, text, e);
        free(text);
        *moved += rc == 0;
        if (rc == 0)
            fprintf(stderr, "INFO: experiment %s: %d secret value%s of its config moved out of the database into "
                            "secrets/%s.json\n",
                    r->id, cJSON_GetArraySize(list), cJSON_GetArraySize(list) == 1 ? "" : "s", r->id);
    }
    cJSON_Delete(list);
    cJSON_Delete(cfg);
    return rc;
}

int cli_secrets_migrate(struct db *db, const char *home)
{
    char *marker = xasprintf("%s/secrets/.moved", home);
    if (access(marker, F_OK) == 0) {
        free(marker);
        return 0;
    }
    struct errbuf e;
    struct exp_config_row *rows;
    int n, moved = 0;
    int rc = exp_config_rows(db, &rows, &n, &e);
    /* the old text is overwritten with zeros where SQLite frees it, not left in the file */
    if (rc == 0 && n > 0)
        db_secure_delete(db, 1);
    for (int i = 0; rc == 0 && i < n; i++)
        if (rows[i].id && rows[i].config && is_experiment_id(rows[i].id) &&
            migrate_row(db, home, &rows[i], &moved, &e) < 0)
            rc = -1;
    if (n > 0)
        db_secure_delete(db, 0);
    exp_config_rows_free(rows, n);
    char *dir = path_join(home, "secrets");
    /* a marker after a check that changed nothing (a new home: every create) needs no
     * fsync: lost in a power cut, it only costs the check again */
    if (rc == 0 && (mkdir_p(dir, 0700) < 0 || (moved ? write_file_atomic(marker, "", 0, 0600)
                                                    : write_file_replace(marker, "", 0, 0600)) < 0))
        rc = errf(&e, "cannot write %s: %s", marker, strerror(errno));
    if (rc < 0)
        cli_error("moving the secrets of stored configs out of the database: %s", e.msg);
    free(dir);
    free(marker);
    return rc;
}

static int known(void *ctx, const char *id)
{
    struct errbuf e;
    /* an error counts as known: nothing is removed on doubt */
    return exp_exists(ctx, id, &e) != 0;
}

char *cli_db_home(const struct db *db)
{
    const char *slash = strrchr(db->path, '/');
    return slash ? xstrndup(db->path, (size_t)(slash - db->path)) : xstrdup(".");
}

int cli_secrets_sweep(struct db *db, const char *home)
{
    /* a create writes the file a moment before its row: a minute is far beyond that */
    return secrets_sweep(home, 60, known, db);
}

struct db *cli_open_home(const char *home_opt, char **home_out)
{
    char *home;
    struct db *db = cli_open_db(home_opt, &home);
    if (!db)
        return NULL;
    cli_secrets_migrate(db, home); /* once per home; a failure is said, the command goes on */
    if (home_out)
        *home_out = home;
    else
        free(home);
    return db;
}

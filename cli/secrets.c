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

struct row {
    char *id, *config;
};

/* Moves the secrets of one stored row out: the file first, then the row (a crash
 * between leaves the row as it was, and the next open does it again). */
static int migrate_row(struct db *db, const char *home, const struct row *r, struct errbuf *e)
{
    cJSON *cfg = cJSON_Parse(r->config);
    if (!cfg)
        return 0; /* not ours to judge here */
    cJSON *list = config_secrets_split(cfg);
    int rc = 0;
    if (cJSON_GetArraySize(list) > 0) {
        char *text = cJSON_PrintUnformatted(cfg);
        rc = secrets_store(home, r->id, list, e);
        if (rc == 0 && db_run(db, e, "UPDATE experiment SET config = ? WHERE id = ? AND config = ?", "sss", text,
                              r->id, r->config) < 0)
            rc = -1;
        free(text);
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
    struct row *rows = NULL;
    int n = 0, cap = 0, rc = 0;
    /* the old text is overwritten with zeros where SQLite frees it, not left in the file */
    sqlite3_exec(db->h, "PRAGMA secure_delete = ON", NULL, NULL, NULL);
    sqlite3_stmt *st = db_query(db, &e, "SELECT id, config FROM experiment", "");
    if (!st)
        rc = -1;
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap)
            rows = xrealloc(rows, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *rows);
        rows[n].id = col_str(st, 0);
        rows[n].config = col_str(st, 1);
        n++;
    }
    for (int i = 0; i < n; i++) {
        if (rc == 0 && rows[i].id && rows[i].config && is_experiment_id(rows[i].id) &&
            migrate_row(db, home, &rows[i], &e) < 0)
            rc = -1;
        free(rows[i].id);
        free(rows[i].config);
    }
    free(rows);
    sqlite3_exec(db->h, "PRAGMA secure_delete = OFF", NULL, NULL, NULL);
    char *dir = path_join(home, "secrets");
    if (rc == 0 && (mkdir_p(dir, 0700) < 0 || write_file_atomic(marker, "", 0, 0600) < 0))
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
    int64_t one;
    /* an error counts as known: nothing is removed on doubt */
    return db_int(ctx, &e, &one, "SELECT 1 FROM experiment WHERE id = ?", "s", id) != 0;
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

/* nnictl experiment secrets ID --config FILE: the secret values of FILE (the config the
 * experiment was created from, or one with the same secrets) written as the
 * experiment's secrets file, for the placeholders its stored config holds: after a pack
 * was loaded (packs hold no secrets), or to change a password. */
static int cmd_secrets_fn(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"home", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0}};
    const char *path = NULL, *home_opt = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:H:", opts, NULL)) != -1) {
        if (c == 'c')
            path = optarg;
        else if (c == 'H')
            home_opt = optarg;
        else
            return cli_error("usage: %s", cmd_experiment_secrets.usage);
    }
    if (!path)
        return cli_error("the following arguments are required: --config/-c");
    struct cli_target t;
    if (cli_target_open(&t, home_opt, optind < argc ? argv[optind] : NULL, 0) != 0)
        return 1;
    struct exp_config *cfg = NULL;
    struct errbuf e;
    int rc = 1;
    cJSON *stored = cJSON_Parse(t.x.config), *list = NULL, *keep = cJSON_CreateArray();
    if (config_load(path, &cfg, &e) < 0) {
        cli_error("%s", e.msg);
        goto done;
    }
    list = config_secrets_split(cfg->canonical);
    /* only the values whose places the stored config keeps for them */
    const cJSON *s;
    cJSON_ArrayForEach(s, list) {
        const cJSON *at = stored, *step;
        cJSON_ArrayForEach(step, cJSON_GetObjectItemCaseSensitive(s, "path")) {
            if (cJSON_IsString(step))
                at = cJSON_GetObjectItemCaseSensitive(at, step->valuestring);
            else
                at = cJSON_IsArray(at) ? cJSON_GetArrayItem(at, (int)step->valuedouble) : NULL;
        }
        if (at && secrets_place_holds(at, s))
            cJSON_AddItemToArray(keep, cJSON_Duplicate(s, 1));
    }
    if (cJSON_GetArraySize(keep) == 0) {
        cli_error("%s: none of its secret values has a place in the stored config of %s", path, t.id);
        goto done;
    }
    if (secrets_store(t.home, t.id, keep, &e) < 0) {
        cli_error("%s", e.msg);
        goto done;
    }
    printf("%d secret value%s of %s written to its secrets file; they take effect at the next `nnictl resume %s`\n",
           cJSON_GetArraySize(keep), cJSON_GetArraySize(keep) == 1 ? "" : "s", t.id, t.id);
    rc = 0;
done:
    cJSON_Delete(keep);
    cJSON_Delete(list);
    cJSON_Delete(stored);
    config_free(cfg);
    cli_target_close(&t);
    return rc;
}

const struct cli_cmd cmd_experiment_secrets = {"experiment", "secrets", "nnictl experiment secrets [ID] --config FILE",
                                               cmd_secrets_fn};

/* save.c: nnictl experiment save | load (spec §1.1): one stopped experiment, its rows
 * and the files of its directory (optionally its code directory), in one file that
 * loads back into this or another trialq home (schema/pack.h). NNI packs a zip; this
 * pack is an SQLite file, nni_experiment_<id>.sqlite, readable with sqlite3. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "schema/pack.h"

#define MAX_FILE_BYTES (512LL << 20) /* one file in a pack (SQLite's blob limit is ~1 GB) */

struct walk {
    struct pack *p;
    const char *area;
    int nfiles, skipped;
    int64_t bytes;
    struct errbuf *e;
};

/* Adds every regular file under dir (rel = its path below the root) to the pack.
 * Symbolic links and special files are skipped (counted). */
static int walk_dir(struct walk *w, const char *dir, const char *rel)
{
    DIR *d = opendir(dir);
    if (!d)
        return errf(w->e, "cannot read directory %s: %s", dir, strerror(errno));
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char *path = path_join(dir, de->d_name);
        char *r = *rel ? xasprintf("%s/%s", rel, de->d_name) : xstrdup(de->d_name);
        struct stat st;
        if (lstat(path, &st) < 0) {
            rc = errf(w->e, "%s: %s", path, strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            rc = walk_dir(w, path, r);
        } else if (S_ISREG(st.st_mode)) {
            if (st.st_size > MAX_FILE_BYTES) {
                rc = errf(w->e, "%s: %lld bytes; files over %lld MB cannot be saved", path, (long long)st.st_size,
                          MAX_FILE_BYTES >> 20);
            } else {
                size_t len = 0;
                char *data = read_file(path, &len);
                if (!data)
                    rc = errf(w->e, "cannot read %s: %s", path, strerror(errno));
                else
                    rc = pack_add_file(w->p, w->area, r, (int)(st.st_mode & 0777), data, len, w->e);
                free(data);
                w->nfiles++;
                w->bytes += (int64_t)len;
            }
        } else {
            w->skipped++;
        }
        free(path);
        free(r);
    }
    closedir(d);
    return rc;
}

static int cmd_save_fn(int argc, char **argv)
{
    static const struct option opts[] = {
        {"path", required_argument, NULL, 'p'}, {"saveCodeDir", no_argument, NULL, 's'},
        {"home", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0},
    };
    const char *dir = ".", *home_opt = NULL;
    int save_code = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:sH:", opts, NULL)) != -1) {
        switch (c) {
        case 'p': dir = optarg; break;
        case 's': save_code = 1; break;
        case 'H': home_opt = optarg; break;
        default: return cli_error("usage: %s", cmd_experiment_save.usage);
        }
    }
    struct cli_target t;
    if (cli_target_open(&t, home_opt, optind < argc ? argv[optind] : NULL, 0) != 0)
        return 1;
    int rc = 1;
    char *out = NULL, *tmp = NULL, *code_dir = NULL;
    struct errbuf e;
    struct pack *p = NULL;
    if (cli_api_alive(&t.x)) {
        cli_error("Only stopped experiments can be saved: experiment %s is running; stop it first: nnictl stop %s",
                  t.id, t.id);
        goto done;
    }
    struct stat st;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        cli_error("--path: %s is not a directory", dir);
        goto done;
    }
    char name[64];
    snprintf(name, sizeof name, "nni_experiment_%s.sqlite", t.id);
    out = path_join(dir, name);
    if (access(out, F_OK) == 0) {
        cli_error("%s already exists; remove it or choose another --path", out);
        goto done;
    }
    if (save_code) {
        cJSON *cfg = cJSON_Parse(t.x.config);
        const cJSON *cd = cJSON_GetObjectItemCaseSensitive(cfg, "trialCodeDirectory");
        code_dir = cJSON_IsString(cd) ? xstrdup(cd->valuestring) : NULL;
        cJSON_Delete(cfg);
        if (!code_dir) {
            cli_error("--saveCodeDir: the config of %s has no trialCodeDirectory", t.id);
            goto done;
        }
    }
    /* written under another name and renamed when complete: a pack with this name is whole */
    tmp = xasprintf("%s.tmp-%d", out, (int)getpid());
    if (pack_create(t.db, t.id, tmp, &p, &e) < 0) {
        cli_error("%s", e.msg);
        goto done;
    }
    struct walk w = {.p = p, .area = "experiment", .e = &e};
    if (access(t.x.exp_dir, F_OK) == 0 && walk_dir(&w, t.x.exp_dir, "") < 0) {
        cli_error("%s", e.msg);
        goto done;
    }
    int nexp = w.nfiles;
    w.area = "code";
    w.nfiles = 0;
    if (code_dir && walk_dir(&w, code_dir, "") < 0) {
        cli_error("--saveCodeDir: %s", e.msg);
        goto done;
    }
    int rcf = pack_finish(p, &e);
    p = NULL;
    if (rcf < 0 || rename(tmp, out) < 0) {
        cli_error("writing %s: %s", out, rcf < 0 ? e.msg : strerror(errno));
        goto done;
    }
    printf("Experiment %s saved to %s (%d files of its directory%s%d of the code directory, %lld bytes%s)\n", t.id,
           out, nexp, code_dir ? ", " : "", code_dir ? w.nfiles : 0, (long long)w.bytes,
           w.skipped ? "; links and special files skipped" : "");
    if (w.skipped)
        printf("%d symbolic links or special files were not saved\n", w.skipped);
    rc = 0;
done:
    pack_close(p);
    if (tmp) {
        unlink(tmp);
        free(tmp);
    }
    free(out);
    free(code_dir);
    cli_target_close(&t);
    return rc;
}

/* ---------------- load ---------------- */

/* path made absolute against the current directory */
static char *abs_path(const char *path)
{
    char *cwd = getcwd(NULL, 0);
    char *r = path_abs(cwd ? cwd : "/", path);
    free(cwd);
    return r;
}

struct unpack {
    const char *root;
    int keep_existing; /* the code directory: never overwrite the user's files */
    int written, kept;
    struct errbuf *e;
};

/* Before anything is written into the user's code directory: no file of the pack goes
 * through a symbolic link there, or where a directory or a non-directory stands. */
static int check_code_file(void *arg, const char *rel, int mode, const void *data, size_t len)
{
    (void)mode, (void)data, (void)len;
    struct unpack *u = arg;
    char *path = path_join(u->root, rel), *part = path + strlen(path) - strlen(rel);
    int rc = 0;
    for (;;) {
        char *slash = strchr(part, '/');
        if (slash)
            *slash = '\0';
        struct stat st;
        int present = lstat(path, &st) == 0; /* once absent, created below a checked directory */
        if (present && slash && S_ISLNK(st.st_mode))
            rc = errf(u->e, "%s is a symbolic link: the pack's files are not written through links", path);
        else if (present && (slash ? !S_ISDIR(st.st_mode) : S_ISDIR(st.st_mode)))
            rc = errf(u->e, "%s is %sa directory: the pack holds %s", path, slash ? "not " : "", rel);
        if (slash)
            *slash = '/';
        if (rc || !present || !slash)
            break;
        part = slash + 1;
    }
    free(path);
    return rc;
}

static int unpack_file(void *arg, const char *rel, int mode, const void *data, size_t len)
{
    struct unpack *u = arg;
    if (!pack_rel_path_ok(rel)) { /* checked before: kept as the last guard */
        char sh[PACK_SHOWN];
        errf(u->e, "the pack holds a file outside its directory: '%s'; not loaded", pack_shown(rel, sh));
        return -1;
    }
    char *path = path_join(u->root, rel);
    char *slash = strrchr(path, '/');
    int rc = 0;
    *slash = '\0';
    if (mkdir_p(path, 0700) < 0)
        rc = errf(u->e, "cannot create %s: %s", path, strerror(errno));
    *slash = '/';
    struct stat st;
    if (rc == 0 && u->keep_existing && lstat(path, &st) == 0) {
        u->kept++;
    } else if (rc == 0) {
        if (write_file_replace(path, data, len, (mode_t)(mode & 0777)) < 0)
            rc = errf(u->e, "cannot write %s: %s", path, strerror(errno));
        else
            u->written++;
    }
    free(path);
    return rc;
}

static int cmd_load_fn(int argc, char **argv)
{
    static const struct option opts[] = {
        {"path", required_argument, NULL, 'p'}, {"codeDir", required_argument, NULL, 'c'},
        {"logDir", required_argument, NULL, 'l'}, {"searchSpacePath", required_argument, NULL, 's'},
        {"home", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0},
    };
    const char *path = NULL, *code_opt = NULL, *log_opt = NULL, *ss_opt = NULL, *home_opt = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:c:l:s:H:", opts, NULL)) != -1) {
        switch (c) {
        case 'p': path = optarg; break;
        case 'c': code_opt = optarg; break;
        case 'l': log_opt = optarg; break;
        case 's': ss_opt = optarg; break;
        case 'H': home_opt = optarg; break;
        default: return cli_error("usage: %s", cmd_experiment_load.usage);
        }
    }
    if (!path)
        return cli_error("the following arguments are required: --path/-p");
    char *home = NULL;
    struct db *db = cli_open_db(home_opt, &home);
    if (!db)
        return 1;
    struct errbuf e;
    struct pack *p = NULL;
    char *id = NULL, *old_dir = NULL, *old_config = NULL, *workdir = NULL, *exp_dir = NULL, *tmp = NULL;
    char *code_dir = NULL, *config = NULL, *ss = NULL;
    cJSON *cfg = NULL;
    int rc = 1, moved = 0;
    /* the pack may come from someone else: everything in it is checked (the rows by a
     * dry run of their insertion, the code files against --codeDir) before anything
     * is written */
    if (pack_open(db, path, &p, &id, &e) < 0 || pack_experiment_info(p, &old_dir, &old_config, &e) < 0) {
        cli_error("--path %s: %s", path, e.msg);
        goto done;
    }
    cfg = cJSON_Parse(old_config);
    if (!cJSON_IsObject(cfg)) {
        cli_error("--path %s: the stored config of %s is not a JSON object", path, id);
        goto done;
    }
    /* NNI's order: --logDir, else the config's working directory, else the home */
    const cJSON *wd = cJSON_GetObjectItemCaseSensitive(cfg, "experimentWorkingDirectory");
    workdir = log_opt ? abs_path(log_opt) : cJSON_IsString(wd) ? xstrdup(wd->valuestring) : xstrdup(home);
    exp_dir = path_join(workdir, id);
    if (access(exp_dir, F_OK) == 0) {
        cli_error("%s already exists; remove it or load into another --logDir", exp_dir);
        goto done;
    }
    if (code_opt) {
        code_dir = abs_path(code_opt);
        cJSON_ReplaceItemInObjectCaseSensitive(cfg, "trialCodeDirectory", cJSON_CreateString(code_dir));
    }
    if (cJSON_HasObjectItem(cfg, "experimentWorkingDirectory") || log_opt) {
        cJSON_DeleteItemFromObjectCaseSensitive(cfg, "experimentWorkingDirectory");
        cJSON_AddStringToObject(cfg, "experimentWorkingDirectory", workdir);
    }
    config = cJSON_PrintUnformatted(cfg);
    if (pack_load_rows(p, exp_dir, config, 1, &e) < 0) {
        cli_error("--path %s: %s", path, e.msg);
        goto done;
    }
    struct unpack uc = {.root = code_dir, .keep_existing = 1, .e = &e};
    if (code_dir && pack_each_file(p, "code", check_code_file, &uc, &e) != 0) {
        cli_error("--codeDir: %s", e.msg);
        goto done;
    }
    if (ss_opt) {
        if (pack_search_space(p, &ss, &e) < 0) {
            cli_error("--searchSpacePath: the pack has no search space");
            goto done;
        }
        if (access(ss_opt, F_OK) == 0) {
            cli_error("--searchSpacePath %s: already exists", ss_opt);
            goto done;
        }
    }
    /* checked: now written */
    if (mkdir_p(workdir, 0700) < 0) {
        cli_error("cannot create %s: %s (choose another with --logDir)", workdir, strerror(errno));
        goto done;
    }
    /* unpacked beside its place and renamed into it: the directory appears whole */
    tmp = xasprintf("%s/.%s.loading-%d", workdir, id, (int)getpid());
    if (mkdir(tmp, 0700) < 0) {
        cli_error("cannot create %s: %s", tmp, strerror(errno));
        free(tmp);
        tmp = NULL;
        goto done;
    }
    struct unpack u = {.root = tmp, .e = &e};
    if (pack_each_file(p, "experiment", unpack_file, &u, &e) != 0) {
        cli_error("%s", e.msg);
        goto done;
    }
    if (code_dir) {
        if (mkdir_p(code_dir, 0700) < 0) {
            cli_error("--codeDir: cannot create %s: %s", code_dir, strerror(errno));
            goto done;
        }
        if (pack_each_file(p, "code", unpack_file, &uc, &e) != 0) {
            cli_error("--codeDir: %s", e.msg);
            goto done;
        }
        if (uc.kept)
            printf("%d files already in %s were kept (not overwritten)\n", uc.kept, code_dir);
    }
    if (ss_opt && write_file_replace(ss_opt, ss, strlen(ss), 0600) < 0) {
        cli_error("--searchSpacePath %s: %s", ss_opt, strerror(errno));
        goto done;
    }
    if (rename(tmp, exp_dir) < 0) {
        cli_error("cannot move %s to %s: %s", tmp, exp_dir, strerror(errno));
        goto done;
    }
    moved = 1;
    if (pack_load_rows(p, exp_dir, config, 0, &e) < 0) {
        cli_error("%s", e.msg);
        goto done;
    }
    printf("Experiment %s loaded: %d files in %s. Resume it with: nnictl resume %s\n", id, u.written, exp_dir, id);
    rc = 0;
done:
    if (rc != 0 && moved)
        rm_rf(exp_dir);
    if (tmp) {
        if (!moved)
            rm_rf(tmp);
        free(tmp);
    }
    pack_close(p);
    cJSON_Delete(cfg);
    free(config);
    free(ss);
    free(code_dir);
    free(exp_dir);
    free(workdir);
    free(old_dir);
    free(old_config);
    free(id);
    free(home);
    db_close(db);
    return rc;
}

const struct cli_cmd cmd_experiment_save = {"experiment", "save", "nnictl experiment save [ID] [--path DIR] [--saveCodeDir]",
                                            cmd_save_fn};
const struct cli_cmd cmd_experiment_load = {"experiment", "load",
                                            "nnictl experiment load --path FILE [--codeDir DIR] [--logDir DIR]"
                                            " [--searchSpacePath FILE]",
                                            cmd_load_fn};

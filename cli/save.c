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
#include "common/secrets.h"
#include "config/config.h"
#include "schema/pack.h"

#define MAX_FILE_BYTES (512LL << 20) /* one file in a pack (SQLite's blob limit is ~1 GB) */

struct walk {
    struct pack *p;
    const char *area;
    int nfiles, skipped;
    int64_t bytes;
    struct errbuf *e;
};

/* Whether the file name in the folder rel is a trial's channel file (.nni/channel of a
 * local trial or a cluster relay, .nni/api-channel of a Kubernetes job): its URL holds
 * the trial's channel token, which a pack must not carry. */
static int holds_channel_token(const char *rel, const char *name)
{
    const char *slash = strrchr(rel, '/');
    const char *parent = slash ? slash + 1 : rel;
    return strcmp(parent, ".nni") == 0 && (strcmp(name, "channel") == 0 || strcmp(name, "api-channel") == 0);
}

/* Adds every regular file under dir (rel = its path below the root) to the pack.
 * Symbolic links and special files are skipped (counted), trials' channel files left out. */
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
        } else if (S_ISREG(st.st_mode) && holds_channel_token(rel, de->d_name)) {
            /* not saved: a trial channel's URL names its token (docs/security.md) */
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

/* What save writes, checked before anything is: the experiment stopped, --path a
 * directory without the pack's name in it, the code directory when --saveCodeDir. The
 * pack's path (and *code_dir), or NULL with the error said. */
static char *save_target(const struct cli_target *t, const char *dir, int save_code, char **code_dir)
{
    *code_dir = NULL;
    if (cli_api_alive(&t->x)) {
        cli_error("Only stopped experiments can be saved: experiment %s is running; stop it first: nnictl stop %s",
                  t->id, t->id);
        return NULL;
    }
    struct stat st;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        cli_error("--path: %s is not a directory", dir);
        return NULL;
    }
    char name[64];
    snprintf(name, sizeof name, "nni_experiment_%s.sqlite", t->id);
    char *out = path_join(dir, name);
    if (access(out, F_OK) == 0) {
        cli_error("%s already exists; remove it or choose another --path", out);
        free(out);
        return NULL;
    }
    if (save_code) {
        cJSON *cfg = cJSON_Parse(t->x.config);
        const cJSON *cd = cJSON_GetObjectItemCaseSensitive(cfg, "trialCodeDirectory");
        *code_dir = cJSON_IsString(cd) ? xstrdup(cd->valuestring) : NULL;
        cJSON_Delete(cfg);
        if (!*code_dir) {
            cli_error("--saveCodeDir: the config of %s has no trialCodeDirectory", t->id);
            free(out);
            return NULL;
        }
    }
    return out;
}

static const struct option save_opts[] = {
    {"path", required_argument, NULL, 'p'}, {"saveCodeDir", no_argument, NULL, 's'},
    {"home", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0},
};
static int cmd_save_fn(int argc, char **argv)
{
    const char *dir = ".", *home_opt = NULL;
    int save_code = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:sH:", save_opts, NULL)) != -1) {
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
    if (!(out = save_target(&t, dir, save_code, &code_dir)))
        goto done;
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

/* nnictl experiment load: what it was asked and what it found so far. */
struct load {
    const char *path, *code_opt, *log_opt, *ss_opt, *home_opt;
    char *home;
    struct db *db;
    struct pack *p;
    char *id, *old_dir, *old_config, *workdir, *exp_dir, *tmp, *code_dir, *config, *ss;
    cJSON *cfg;
    cJSON *secrets;    /* what a pack of a trialq before secrets files held in its config */
    struct unpack uc;  /* the code files (--codeDir) */
    int written;       /* files of the experiment directory */
    int moved;         /* the directory is in its place */
    struct errbuf e;
};

/* The pack may come from someone else: everything in it is checked (the rows by a dry
 * run of their insertion, the code files against --codeDir) before anything is written.
 * 0, or 1 (said). */
static int load_check(struct load *l)
{
    if (pack_open(l->db, l->path, &l->p, &l->id, &l->e) < 0 ||
        pack_experiment_info(l->p, &l->old_dir, &l->old_config, &l->e) < 0)
        return cli_error("--path %s: %s", l->path, l->e.msg);
    l->cfg = cJSON_Parse(l->old_config);
    if (!cJSON_IsObject(l->cfg))
        return cli_error("--path %s: the stored config of %s is not a JSON object", l->path, l->id);
    /* NNI's order: --logDir, else the config's working directory, else the home */
    const cJSON *wd = cJSON_GetObjectItemCaseSensitive(l->cfg, "experimentWorkingDirectory");
    l->workdir = l->log_opt ? abs_path(l->log_opt) : cJSON_IsString(wd) ? xstrdup(wd->valuestring) : xstrdup(l->home);
    l->exp_dir = path_join(l->workdir, l->id);
    if (access(l->exp_dir, F_OK) == 0)
        return cli_error("%s already exists; remove it or load into another --logDir", l->exp_dir);
    if (l->code_opt) {
        l->code_dir = abs_path(l->code_opt);
        cJSON_ReplaceItemInObjectCaseSensitive(l->cfg, "trialCodeDirectory", cJSON_CreateString(l->code_dir));
    }
    if (cJSON_HasObjectItem(l->cfg, "experimentWorkingDirectory") || l->log_opt) {
        cJSON_DeleteItemFromObjectCaseSensitive(l->cfg, "experimentWorkingDirectory");
        cJSON_AddStringToObject(l->cfg, "experimentWorkingDirectory", l->workdir);
    }
    /* a pack saved before secrets moved out of the database holds them in its config:
     * they go to the secrets file as at create (docs/security.md) */
    l->secrets = config_secrets_split(l->cfg);
    l->config = cJSON_PrintUnformatted(l->cfg);
    if (pack_load_rows(l->p, l->exp_dir, l->config, 1, config_shared_storage, &l->e) < 0)
        return cli_error("--path %s: %s", l->path, l->e.msg);
    l->uc = (struct unpack){.root = l->code_dir, .keep_existing = 1, .e = &l->e};
    if (l->code_dir && pack_each_file(l->p, "code", check_code_file, &l->uc, &l->e) != 0)
        return cli_error("--codeDir: %s", l->e.msg);
    if (l->ss_opt) {
        if (pack_search_space(l->p, &l->ss, &l->e) < 0)
            return cli_error("--searchSpacePath: the pack has no search space");
        if (access(l->ss_opt, F_OK) == 0)
            return cli_error("--searchSpacePath %s: already exists", l->ss_opt);
    }
    return 0;
}

/* Checked: now written. The directory is unpacked beside its place and renamed into it
 * (it appears whole), then the rows go in. 0, or 1 (said). */
static int load_write(struct load *l)
{
    if (mkdir_p(l->workdir, 0700) < 0)
        return cli_error("cannot create %s: %s (choose another with --logDir)", l->workdir, strerror(errno));
    l->tmp = xasprintf("%s/.%s.loading-%d", l->workdir, l->id, (int)getpid());
    if (mkdir(l->tmp, 0700) < 0) {
        cli_error("cannot create %s: %s", l->tmp, strerror(errno));
        free(l->tmp);
        l->tmp = NULL;
        return 1;
    }
    struct unpack u = {.root = l->tmp, .e = &l->e};
    if (pack_each_file(l->p, "experiment", unpack_file, &u, &l->e) != 0)
        return cli_error("%s", l->e.msg);
    l->written = u.written;
    if (l->code_dir) {
        if (mkdir_p(l->code_dir, 0700) < 0)
            return cli_error("--codeDir: cannot create %s: %s", l->code_dir, strerror(errno));
        if (pack_each_file(l->p, "code", unpack_file, &l->uc, &l->e) != 0)
            return cli_error("--codeDir: %s", l->e.msg);
        if (l->uc.kept)
            printf("%d files already in %s were kept (not overwritten)\n", l->uc.kept, l->code_dir);
    }
    if (l->ss_opt && write_file_replace(l->ss_opt, l->ss, strlen(l->ss), 0600) < 0)
        return cli_error("--searchSpacePath %s: %s", l->ss_opt, strerror(errno));
    if (rename(l->tmp, l->exp_dir) < 0)
        return cli_error("cannot move %s to %s: %s", l->tmp, l->exp_dir, strerror(errno));
    l->moved = 1;
    if (cJSON_GetArraySize(l->secrets) > 0 && secrets_store(l->home, l->id, l->secrets, &l->e) < 0)
        return cli_error("%s", l->e.msg);
    if (pack_load_rows(l->p, l->exp_dir, l->config, 0, config_shared_storage, &l->e) < 0) {
        secrets_remove(l->home, l->id);
        return cli_error("%s", l->e.msg);
    }
    if (secrets_has_placeholder(l->cfg) && cJSON_GetArraySize(l->secrets) == 0)
        printf("The pack holds no secrets (passwords, tokens, access keys): before `nnictl resume %s`, set the "
               "platform's environment variables for them, or write them back with `nnictl experiment secrets "
               "%s --config <the experiment's config file>` (docs/security.md)\n",
               l->id, l->id);
    return 0;
}

static const struct option load_opts[] = {
    {"path", required_argument, NULL, 'p'}, {"codeDir", required_argument, NULL, 'c'},
    {"logDir", required_argument, NULL, 'l'}, {"searchSpacePath", required_argument, NULL, 's'},
    {"home", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0},
};
static int cmd_load_fn(int argc, char **argv)
{
    struct load l = {0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:c:l:s:H:", load_opts, NULL)) != -1) {
        switch (c) {
        case 'p': l.path = optarg; break;
        case 'c': l.code_opt = optarg; break;
        case 'l': l.log_opt = optarg; break;
        case 's': l.ss_opt = optarg; break;
        case 'H': l.home_opt = optarg; break;
        default: return cli_error("usage: %s", cmd_experiment_load.usage);
        }
    }
    if (!l.path)
        return cli_error("the following arguments are required: --path/-p");
    l.db = cli_open_home(l.home_opt, &l.home);
    if (!l.db)
        return 1;
    int rc = load_check(&l) != 0 || load_write(&l) != 0;
    if (rc == 0)
        printf("Experiment %s loaded: %d files in %s. Resume it with: nnictl resume %s\n", l.id, l.written, l.exp_dir,
               l.id);
    if (rc != 0 && l.moved)
        rm_rf(l.exp_dir);
    if (l.tmp) {
        if (!l.moved)
            rm_rf(l.tmp);
        free(l.tmp);
    }
    pack_close(l.p);
    cJSON_Delete(l.cfg);
    cJSON_Delete(l.secrets);
    free(l.config);
    free(l.ss);
    free(l.code_dir);
    free(l.exp_dir);
    free(l.workdir);
    free(l.old_dir);
    free(l.old_config);
    free(l.id);
    free(l.home);
    db_close(l.db);
    return rc;
}

const struct cli_cmd cmd_experiment_save = {
    "experiment", "save", "nnictl experiment save [ID] [--path DIR] [--saveCodeDir]", cmd_save_fn,
    "Packs a stopped experiment (its rows and the files of its directory; --saveCodeDir: its "
    "code too) into one SQLite file.",
    save_opts};
const struct cli_cmd cmd_experiment_load = {
    "experiment", "load",
    "nnictl experiment load --path FILE [--codeDir DIR] [--logDir DIR] [--searchSpacePath FILE]", cmd_load_fn,
    "Creates an experiment from a pack written by experiment save, in this home.",
    load_opts};

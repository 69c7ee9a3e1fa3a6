/* export.c: nnictl experiment export | import (NNI's formats, spec §9).
 * Export reads the database, so it works whether or not the experiment runs; import
 * goes through the running api (POST /experiment/import-data), which stores the
 * records for the tuner. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tuners/tuner.h"
#include "config/config.h"
#include "schema/listing.h"

/* The export-data records (with "intermediate" lists when asked) in pieces of a few
 * hundred kB, each handed to fn as the text of a JSON array's items (after the first
 * piece it begins with a comma): the whole export is never in memory, whatever the
 * history's size. 0, or 1 with the error told (fn returns the same). */
typedef int (*export_piece_fn)(void *arg, const char *text, size_t len);

static int export_pieces(struct db *db, const char *id, int intermediate, export_piece_fn fn, void *arg)
{
    struct page p;
    page_init(&p, id);
    struct strbuf sb;
    sb_init(&sb);
    struct errbuf e;
    int rc = 0;
    while (rc == 0 && !p.done) {
        sb.len = 0;
        if (sb.buf)
            sb.buf[0] = '\0';
        if (export_page_next(db, &p, intermediate, (size_t)256 << 10, &sb, &e) < 0)
            rc = cli_error("export %s: %s", id, e.msg);
        else if (sb.len)
            rc = fn(arg, sb.buf, sb.len);
    }
    sb_free(&sb);
    return rc;
}

/* The output file, written beside its path and renamed over it once complete. */
struct out_file {
    const char *path;
    char *tmp;
    FILE *f;
};

static int out_open(struct out_file *o, const char *path)
{
    o->path = path;
    o->tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
    o->f = fopen(o->tmp, "w");
    if (!o->f) {
        free(o->tmp);
        return cli_error("cannot write %s", path);
    }
    return 0;
}

/* Closes the file and renames it over the path, or removes it when something failed
 * before (failed: that error was told) or now. 0, or 1 with the error told. */
static int out_close(struct out_file *o, int failed)
{
    int bad = ferror(o->f);
    if (fclose(o->f) != 0)
        bad = 1;
    if (!failed && !bad && rename(o->tmp, o->path) != 0)
        bad = 1;
    if (failed || bad)
        unlink(o->tmp);
    free(o->tmp);
    if (bad && !failed)
        return cli_error("cannot write %s", o->path);
    return failed || bad;
}

static int json_piece(void *arg, const char *text, size_t len)
{
    struct out_file *o = arg;
    return fwrite(text, 1, len, o->f) == len ? 0 : cli_error("cannot write %s", o->path);
}

static int write_json(struct db *db, const char *id, const char *path, int intermediate)
{
    struct out_file o;
    if (out_open(&o, path) != 0)
        return 1;
    fputc('[', o.f);
    int rc = export_pieces(db, id, intermediate, json_piece, &o);
    if (rc == 0)
        fputc(']', o.f);
    return out_close(&o, rc);
}

/* ---------------- CSV, as NNI writes it with csv.DictWriter ---------------- */

struct columns {
    char **names;
    int n;
};

static void column_add(struct columns *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->names[i], name) == 0)
            return;
    c->names = xrealloc(c->names, sizeof *c->names * (size_t)(c->n + 1));
    c->names[c->n++] = xstrdup(name);
}

/* Python's str() of a JSON number: the shortest text that reads back the same. */
static void number_text(double d, char *out, size_t n)
{
    if (d == floor(d) && fabs(d) < 1e16) {
        snprintf(out, n, "%.0f", d);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, d);
        if (strtod(out, NULL) == d)
            return;
    }
}

static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static char *cell_text(const cJSON *v)
{
    if (!v)
        return xstrdup("");
    if (cJSON_IsString(v))
        return xstrdup(v->valuestring);
    if (cJSON_IsNumber(v)) {
        char buf[64];
        number_text(v->valuedouble, buf, sizeof buf);
        return xstrdup(buf);
    }
    if (cJSON_IsBool(v))
        return xstrdup(cJSON_IsTrue(v) ? "True" : "False");
    return cJSON_PrintUnformatted(v);
}

/* One flat record per trial: intermediate, the parameters, reward or the metric's
 * keys, trialJobId. */
static cJSON *csv_row(const cJSON *rec, int intermediate)
{
    cJSON *row = cJSON_CreateObject();
    if (intermediate) {
        struct strbuf sb;
        sb_init(&sb);
        sb_add(&sb, "[", 1);
        const cJSON *it;
        int k = 0;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(rec, "intermediate"))
        {
            sb_printf(&sb, "%s%s", k++ ? "," : "", cJSON_IsString(it) ? it->valuestring : "");
        }
        sb_add(&sb, "]", 1);
        cJSON_AddStringToObject(row, "intermediate", sb.buf);
        sb_free(&sb);
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(rec, "parameter"))
    {
        cJSON_DeleteItemFromObjectCaseSensitive(row, it->string);
        cJSON_AddItemToObject(row, it->string, cJSON_Duplicate(it, 1));
    }
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(rec, "value");
    cJSON *decoded = cJSON_IsString(value) ? cJSON_Parse(value->valuestring) : NULL;
    if (cJSON_IsObject(decoded)) {
        cJSON_ArrayForEach(it, decoded)
        {
            cJSON_DeleteItemFromObjectCaseSensitive(row, it->string);
            cJSON_AddItemToObject(row, it->string, cJSON_Duplicate(it, 1));
        }
    } else {
        cJSON_AddItemToObject(row, "reward", decoded ? cJSON_Duplicate(decoded, 1) : cJSON_CreateNull());
    }
    cJSON_Delete(decoded);
    cJSON_DeleteItemFromObjectCaseSensitive(row, "trialJobId");
    cJSON_AddItemToObject(row, "trialJobId", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rec, "trialJobId"), 1));
    return row;
}

/* Two passes over the records, in one read snapshot: the columns (their union in order
 * of first appearance, as NNI's DictWriter gets them), then the rows. */
struct csv_pass {
    int intermediate;
    struct columns cols;
    struct out_file *out; /* NULL: the first pass */
};

static int csv_piece(void *arg, const char *text, size_t len)
{
    struct csv_pass *c = arg;
    struct strbuf sb;
    sb_init(&sb);
    sb_add(&sb, "[", 1);
    sb_add(&sb, text + (*text == ','), len - (*text == ','));
    sb_add(&sb, "]", 1);
    cJSON *records = cJSON_Parse(sb.buf);
    sb_free(&sb);
    if (!records)
        return cli_error("export: bad records");
    const cJSON *rec;
    cJSON_ArrayForEach(rec, records)
    {
        cJSON *row = csv_row(rec, c->intermediate);
        const cJSON *it;
        if (!c->out) {
            cJSON_ArrayForEach(it, row) column_add(&c->cols, it->string);
        } else {
            for (int i = 0; i < c->cols.n; i++) {
                if (i)
                    fputc(',', c->out->f);
                char *cell = cell_text(cJSON_GetObjectItemCaseSensitive(row, c->cols.names[i]));
                csv_field(c->out->f, cell);
                free(cell);
            }
            fputs("\r\n", c->out->f);
        }
        cJSON_Delete(row);
    }
    cJSON_Delete(records);
    return 0;
}

static int write_csv(struct db *db, const char *id, const char *path, int intermediate)
{
    struct csv_pass c = {.intermediate = intermediate};
    int rc = export_pieces(db, id, intermediate, csv_piece, &c);
    if (rc == 0 && c.cols.n == 0) {
        printf("No trial results collected! Please check your trial log...\n");
    } else if (rc == 0) {
        struct out_file o;
        rc = out_open(&o, path);
        if (rc == 0) {
            /* csv's excel dialect: CRLF line ends */
            for (int i = 0; i < c.cols.n; i++) {
                if (i)
                    fputc(',', o.f);
                csv_field(o.f, c.cols.names[i]);
            }
            fputs("\r\n", o.f);
            c.out = &o;
            rc = out_close(&o, export_pieces(db, id, intermediate, csv_piece, &c));
        }
    }
    for (int i = 0; i < c.cols.n; i++)
        free(c.cols.names[i]);
    free(c.cols.names);
    return rc;
}

static const struct option export_opts[] = {
    {"type", required_argument, NULL, 't'}, {"filename", required_argument, NULL, 'f'},
    {"intermediate", no_argument, NULL, 'i'}, {"home", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0},
};
static int cmd_export_fn(int argc, char **argv)
{
    const char *home_opt = NULL, *type = NULL, *path = NULL;
    int intermediate = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "t:f:iH:", export_opts, NULL)) != -1) {
        switch (c) {
        case 't': type = optarg; break;
        case 'f': path = optarg; break;
        case 'i': intermediate = 1; break;
        case 'H': home_opt = optarg; break;
        default: return cli_error("usage: %s", cmd_experiment_export.usage);
        }
    }
    if (!type || !path)
        return cli_error("the following arguments are required: %s%s%s", type ? "" : "--type/-t",
                         !type && !path ? ", " : "", path ? "" : "--filename/-f");
    if (strcmp(type, "json") != 0 && strcmp(type, "csv") != 0)
        return cli_error("argument --type/-t: invalid choice: '%s' (choose from 'json', 'csv')", type);
    struct cli_target t;
    if (cli_target_open(&t, home_opt, optind < argc ? argv[optind] : NULL, 0) != 0)
        return 1;
    /* one read snapshot: the CSV's two passes see the same records */
    struct errbuf e;
    int rc = 1;
    if (db_run(t.db, &e, "BEGIN", "") < 0) {
        cli_error("export %s: %s", t.id, e.msg);
    } else {
        rc = strcmp(type, "json") == 0 ? write_json(t.db, t.id, path, intermediate)
                                       : write_csv(t.db, t.id, path, intermediate);
        db_run(t.db, &e, "COMMIT", "");
    }
    cli_target_close(&t);
    return rc;
}

/* ---------------- import ---------------- */

/* NNI's validate_dispatcher: which tuners take imported data. 0 go on, else the exit code. */
static int tuner_takes_imports(const struct experiment *x)
{
    struct exp_config *cfg = NULL;
    struct errbuf e;
    if (config_from_json(x->config, &cfg, &e) < 0)
        return 0;
    const char *name = cfg->tuner.name;
    /* names are case-insensitive and have aliases: compare the canonical one */
    const struct tuner_ops *ops = name ? tuner_find(name) : NULL;
    if (ops)
        name = ops->name;
    int rc = 0;
    if (!name) {
        rc = 0; /* a customized tuner decides itself */
    } else if (strcmp(name, "Random") == 0 || strcmp(name, "Hyperband") == 0) {
        printf("WARNING: There is no need to import data for %s\n", name);
        rc = -1;
    } else {
        static const char *const ok[] = {"TPE", "Anneal", "GridSearch", "Metis", "BOHB", "SMAC", "BatchTuner",
                                         "Batch", NULL};
        rc = 1;
        for (int i = 0; ok[i]; i++)
            if (strcasecmp(name, ok[i]) == 0)
                rc = 0;
        if (rc)
            cli_error("%s does not support importing addtional data", name);
    }
    config_free(cfg);
    return rc;
}

static const struct option import_opts[] = {
    {"filename", required_argument, NULL, 'f'}, {"home", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0},
};
static int cmd_import_fn(int argc, char **argv)
{
    const char *home_opt = NULL, *path = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:H:", import_opts, NULL)) != -1) {
        if (c == 'f')
            path = optarg;
        else if (c == 'H')
            home_opt = optarg;
        else
            return cli_error("usage: %s", cmd_experiment_import.usage);
    }
    if (!path)
        return cli_error("the following arguments are required: --filename/-f");
    struct stat st;
    if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
        return cli_error("%s is not a valid file path", path);
    size_t len;
    char *text = read_file(path, &len);
    cJSON *data = text ? cJSON_ParseWithLength(text, len) : NULL;
    free(text);
    if (!cJSON_IsArray(data)) {
        cJSON_Delete(data);
        return cli_error("%s: must be a JSON array of {\"parameter\": {...}, \"value\": ...} records", path);
    }
    struct cli_target t;
    if (cli_target_open(&t, home_opt, optind < argc ? argv[optind] : NULL, 0) != 0) {
        cJSON_Delete(data);
        return 1;
    }
    int rc = tuner_takes_imports(&t.x);
    if (rc < 0) {
        rc = 0;
    } else if (rc == 0) {
        cli_target_close(&t);
        /* the api must run: it stores the records for its tuner */
        if (cli_target_open(&t, home_opt, optind < argc ? argv[optind] : NULL, 1) != 0) {
            cJSON_Delete(data);
            return 1;
        }
        char *req = cJSON_PrintUnformatted(data);
        char *body = NULL;
        int code = cli_http(&t.x, "POST", "/experiment/import-data", req, &body);
        if (code == 200) {
            printf("Imported %d record(s) into experiment %s.\n", cJSON_GetArraySize(data), t.id);
        } else {
            char *why = cli_error_of(code, body);
            rc = cli_error("Import data failed! %s", why);
            free(why);
        }
        free(req);
        free(body);
    }
    cJSON_Delete(data);
    cli_target_close(&t);
    return rc;
}

const struct cli_cmd cmd_experiment_export = {
    "experiment", "export",
    "nnictl experiment export [ID] --type json|csv --filename FILE [--intermediate]", cmd_export_fn,
    "Writes the experiment's trials (parameters and results; --intermediate: the intermediate "
    "ones too) to a JSON or CSV file.",
    export_opts};
const struct cli_cmd cmd_experiment_import = {
    "experiment", "import", "nnictl experiment import [ID] --filename FILE", cmd_import_fn,
    "Imports trial results (NNI's import data: parameters and value) into the experiment's "
    "tuner.",
    import_opts};

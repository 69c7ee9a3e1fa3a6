/* kube/config.c: the kubeconfig, read as kubectl reads it. $KUBECONFIG may list several
 * files (':'-separated): the first file that sets current-context wins, and a named
 * context, cluster or user is taken from the first file that defines it. Relative
 * certificate paths are relative to the file that names them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "workers/kube/kube.h"

struct kfile {
    char *path;
    yaml_document_t doc;
    int loaded;
};

static yaml_node_t *map_get(yaml_document_t *d, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        if (k && k->type == YAML_SCALAR_NODE && strcmp((const char *)k->data.scalar.value, key) == 0)
            return yaml_document_get_node(d, p->value);
    }
    return NULL;
}

static const char *scalar(yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE && n->data.scalar.length ? (const char *)n->data.scalar.value : NULL;
}

static const char *map_str(yaml_document_t *d, yaml_node_t *map, const char *key)
{
    return scalar(map_get(d, map, key));
}

/* The `<what>` sub-map of the entry named `name` in the list `list` (contexts, ...). */
static yaml_node_t *named(yaml_document_t *d, const char *list, const char *what, const char *name)
{
    yaml_node_t *seq = map_get(d, yaml_document_get_root_node(d), list);
    if (!seq || seq->type != YAML_SEQUENCE_NODE)
        return NULL;
    for (yaml_node_item_t *i = seq->data.sequence.items.start; i < seq->data.sequence.items.top; i++) {
        yaml_node_t *ent = yaml_document_get_node(d, *i);
        const char *n = map_str(d, ent, "name");
        if (n && strcmp(n, name) == 0) {
            yaml_node_t *sub = map_get(d, ent, what);
            return sub ? sub : ent;
        }
    }
    return NULL;
}

static int load_one(struct kfile *f, struct errbuf *e)
{
    FILE *fp = fopen(f->path, "rb");
    if (!fp)
        return errf(e, "kubeconfig %s: %s", f->path, strerror(errno));
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_file(&p, fp);
    int ok = yaml_parser_load(&p, &f->doc);
    if (!ok) {
        errf(e, "kubeconfig %s:%zu:%zu: %s (fix the YAML, or point KUBECONFIG to a valid file)", f->path,
             p.problem_mark.line + 1, p.problem_mark.column + 1, p.problem ? p.problem : "cannot parse");
        yaml_parser_delete(&p);
        fclose(fp);
        return -1;
    }
    yaml_parser_delete(&p);
    fclose(fp);
    f->loaded = 1;
    yaml_node_t *root = yaml_document_get_root_node(&f->doc);
    if (root && root->type != YAML_MAPPING_NODE)
        return errf(e, "kubeconfig %s: the document is not a mapping (expected apiVersion, kind: Config, "
                       "clusters, contexts, users)", f->path);
    return 0;
}

static char *dir_of(const char *path)
{
    char *d = xstrdup(path);
    char *s = strrchr(d, '/');
    if (s)
        *(s == d ? s + 1 : s) = '\0';
    else
        strcpy(d, ".");
    return d;
}

static char *rel_path(const struct kfile *f, const char *p)
{
    if (!p)
        return NULL;
    char *d = dir_of(f->path);
    char *r = path_abs(d, p);
    free(d);
    return r;
}

static int decode_data(const char *what, const char *file, const char *b64, char **out, size_t *len,
                       struct errbuf *e)
{
    *out = b64_decode(b64, len);
    if (!*out)
        return errf(e, "kubeconfig %s: %s is not valid base64", file, what);
    return 0;
}

void kube_conn_clear(struct kube_conn *k)
{
    if (k->rest.curl)
        curl_easy_cleanup(k->rest.curl);
    free(k->source); free(k->context); free(k->cluster); free(k->user); free(k->server);
    free(k->ca_file); free(k->ca_pem); free(k->cert_file); free(k->key_file);
    free(k->cert_pem); free(k->key_pem); free(k->token); free(k->username); free(k->password);
    free(k->namespace);
    memset(k, 0, sizeof *k);
}

/* The kubeconfig files as kubectl reads them: each existing entry of $KUBECONFIG (a ':'
 * list), else ~/.kube/config. *files a new array of *nf. */
static int config_files(struct kube_conn *k, struct kfile **files, int *nf, struct errbuf *e)
{
    const char *env = getenv("KUBECONFIG");
    *files = NULL;
    *nf = 0;
    if (env && *env) {
        char *list = xstrdup(env), *save = NULL;
        for (char *p = strtok_r(list, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
            if (access(p, F_OK) < 0)
                continue; /* kubectl skips missing entries of the list */
            *files = xrealloc(*files, sizeof **files * (size_t)(*nf + 1));
            memset(&(*files)[*nf], 0, sizeof **files);
            (*files)[(*nf)++].path = xstrdup(p);
        }
        free(list);
        if (*nf == 0)
            return errf(e, "kubeconfig: no file of KUBECONFIG=%s exists; point KUBECONFIG to your cluster's "
                           "kubeconfig", env);
        k->source = xstrdup(env);
        return 0;
    }
    char *home = home_dir();
    char *p = xasprintf("%s/.kube/config", home);
    free(home);
    if (access(p, F_OK) < 0) {
        errf(e, "kubeconfig: %s does not exist and KUBECONFIG is not set; copy your cluster's kubeconfig "
                "there or set KUBECONFIG", p);
        free(p);
        return -1;
    }
    *files = xcalloc(1, sizeof **files);
    (*files)[0].path = p;
    *nf = 1;
    k->source = xstrdup(p);
    return 0;
}

/* The first entry named name in list (contexts, clusters, users) of any file, with its
 * file in *in. */
static yaml_node_t *find_named(struct kfile *files, int nf, const char *list, const char *what, const char *name,
                               struct kfile **in)
{
    for (int i = 0; i < nf; i++) {
        yaml_node_t *n = named(&files[i].doc, list, what, name);
        if (n) {
            *in = &files[i];
            return n;
        }
    }
    return NULL;
}

/* The cluster's server, certificate authority and TLS choice. */
static int config_cluster(struct kube_conn *k, struct kfile *files, int nf, const char *ctx, struct errbuf *e)
{
    struct kfile *clf = NULL;
    yaml_node_t *cl = find_named(files, nf, "clusters", "cluster", k->cluster, &clf);
    if (!cl)
        return errf(e, "kubeconfig %s: context \"%s\" names cluster \"%s\", which is not defined under clusters",
                    k->source, ctx, k->cluster);
    const char *server = map_str(&clf->doc, cl, "server");
    if (!server || (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0))
        return errf(e, "kubeconfig %s: cluster \"%s\" has %s server URL; set clusters[].cluster.server to "
                       "https://HOST:PORT", k->source, k->cluster, server ? "no http(s)" : "no");
    k->server = xstrdup(server);
    size_t sl = strlen(k->server);
    while (sl > 0 && k->server[sl - 1] == '/')
        k->server[--sl] = '\0';
    const char *v;
    if ((v = map_str(&clf->doc, cl, "certificate-authority-data"))) {
        if (decode_data("certificate-authority-data", clf->path, v, &k->ca_pem, &k->ca_len, e) < 0)
            return -1;
    } else if ((v = map_str(&clf->doc, cl, "certificate-authority"))) {
        k->ca_file = rel_path(clf, v);
        if (access(k->ca_file, R_OK) < 0)
            return errf(e, "kubeconfig %s: certificate-authority %s of cluster \"%s\": %s", clf->path, k->ca_file,
                        k->cluster, strerror(errno));
    }
    v = map_str(&clf->doc, cl, "insecure-skip-tls-verify");
    k->insecure = v && strcmp(v, "true") == 0;
    return 0;
}

/* The user's token (token or tokenFile). */
static int user_token(struct kube_conn *k, struct kfile *uf, yaml_node_t *un, struct errbuf *e)
{
    const char *v;
    if ((v = map_str(&uf->doc, un, "token"))) {
        k->token = xstrdup(v);
    } else if ((v = map_str(&uf->doc, un, "tokenFile"))) {
        char *p = rel_path(uf, v);
        char *t = read_file(p, NULL);
        if (!t) {
            errf(e, "kubeconfig %s: tokenFile %s of user \"%s\": %s", uf->path, p, k->user, strerror(errno));
            free(p);
            return -1;
        }
        free(p);
        size_t tl = strlen(t);
        while (tl && (t[tl - 1] == '\n' || t[tl - 1] == '\r' || t[tl - 1] == ' '))
            t[--tl] = '\0';
        k->token = t;
    }
    return 0;
}

/* The user's client certificate and key: both or neither, readable. */
static int user_cert(struct kube_conn *k, struct kfile *uf, yaml_node_t *un, struct errbuf *e)
{
    const char *v;
    if ((v = map_str(&uf->doc, un, "client-certificate-data"))) {
        if (decode_data("client-certificate-data", uf->path, v, &k->cert_pem, &k->cert_len, e) < 0)
            return -1;
    } else if ((v = map_str(&uf->doc, un, "client-certificate"))) {
        k->cert_file = rel_path(uf, v);
    }
    if ((v = map_str(&uf->doc, un, "client-key-data"))) {
        if (decode_data("client-key-data", uf->path, v, &k->key_pem, &k->key_len, e) < 0)
            return -1;
    } else if ((v = map_str(&uf->doc, un, "client-key"))) {
        k->key_file = rel_path(uf, v);
    }
    const char *files_to_check[] = {k->cert_file, k->key_file};
    for (int i = 0; i < 2; i++)
        if (files_to_check[i] && access(files_to_check[i], R_OK) < 0)
            return errf(e, "kubeconfig %s: %s of user \"%s\": %s", uf->path, files_to_check[i], k->user,
                        strerror(errno));
    if ((k->cert_pem || k->cert_file) != (k->key_pem || k->key_file))
        return errf(e, "kubeconfig %s: user \"%s\" has a client certificate without its key (or a key without its "
                       "certificate); set both client-certificate(-data) and client-key(-data)", uf->path, k->user);
    return 0;
}

/* The context's user: token, client certificate, basic auth (no plugins). */
static int config_user(struct kube_conn *k, struct kfile *files, int nf, const char *ctx, const char *user,
                       struct errbuf *e)
{
    k->user = xstrdup(user);
    struct kfile *uf = NULL;
    yaml_node_t *un = find_named(files, nf, "users", "user", user, &uf);
    if (!un)
        return errf(e, "kubeconfig %s: context \"%s\" names user \"%s\", which is not defined under users",
                    k->source, ctx, user);
    if (map_get(&uf->doc, un, "exec") || map_get(&uf->doc, un, "auth-provider"))
        return errf(e, "kubeconfig %s: user \"%s\" uses an exec/auth-provider plugin, which trialq does not run; "
                       "use a token or a client certificate (e.g. a service account token)", uf->path, user);
    if (user_token(k, uf, un, e) < 0 || user_cert(k, uf, un, e) < 0)
        return -1;
    const char *v;
    if ((v = map_str(&uf->doc, un, "username")))
        k->username = xstrdup(v);
    if ((v = map_str(&uf->doc, un, "password")))
        k->password = xstrdup(v);
    return 0;
}

/* The current context: its namespace, cluster and user. */
static int config_context(struct kube_conn *k, struct kfile *files, int nf, struct errbuf *e)
{
    const char *ctx = NULL;
    for (int i = 0; i < nf && !ctx; i++)
        ctx = map_str(&files[i].doc, yaml_document_get_root_node(&files[i].doc), "current-context");
    if (!ctx)
        return errf(e, "kubeconfig %s: no current-context; select one with `kubectl config use-context NAME`",
                    k->source);
    k->context = xstrdup(ctx);
    struct kfile *cf = NULL;
    yaml_node_t *cn = find_named(files, nf, "contexts", "context", ctx, &cf);
    if (!cn)
        return errf(e, "kubeconfig %s: current-context \"%s\" is not among its contexts; fix current-context",
                    k->source, ctx);
    const char *cluster = map_str(&cf->doc, cn, "cluster"), *user = map_str(&cf->doc, cn, "user");
    const char *ns = map_str(&cf->doc, cn, "namespace");
    if (ns)
        k->namespace = xstrdup(ns);
    if (!cluster)
        return errf(e, "kubeconfig %s: context \"%s\" names no cluster", k->source, ctx);
    k->cluster = xstrdup(cluster);
    if (config_cluster(k, files, nf, ctx, e) < 0)
        return -1;
    return user ? config_user(k, files, nf, ctx, user, e) : 0;
}

int kube_config_load(struct kube_conn *k, struct errbuf *e)
{
    memset(k, 0, sizeof *k);
    struct kfile *files;
    int nf, rc = config_files(k, &files, &nf, e);
    for (int i = 0; i < nf && rc == 0; i++)
        rc = load_one(&files[i], e);
    if (rc == 0)
        rc = config_context(k, files, nf, e);
    for (int i = 0; i < nf; i++) {
        if (files[i].loaded)
            yaml_document_delete(&files[i].doc);
        free(files[i].path);
    }
    free(files);
    if (rc < 0)
        kube_conn_clear(k);
    return rc;
}

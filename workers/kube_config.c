/* kube_config.c: the kubeconfig, read as kubectl reads it. $KUBECONFIG may list several
 * files (':'-separated): the first file that sets current-context wins, and a named
 * context, cluster or user is taken from the first file that defines it. Relative
 * certificate paths are relative to the file that names them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "workers/kube.h"

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
    if (k->curl)
        curl_easy_cleanup(k->curl);
    free(k->source); free(k->context); free(k->cluster); free(k->user); free(k->server);
    free(k->ca_file); free(k->ca_pem); free(k->cert_file); free(k->key_file);
    free(k->cert_pem); free(k->key_pem); free(k->token); free(k->username); free(k->password);
    free(k->namespace);
    memset(k, 0, sizeof *k);
}

int kube_config_load(struct kube_conn *k, struct errbuf *e)
{
    memset(k, 0, sizeof *k);
    const char *env = getenv("KUBECONFIG");
    struct kfile files[16];
    int nf = 0, rc = -1;
    if (env && *env) {
        char *list = xstrdup(env), *save = NULL;
        for (char *p = strtok_r(list, ":", &save); p && nf < 16; p = strtok_r(NULL, ":", &save)) {
            if (access(p, F_OK) < 0)
                continue; /* kubectl skips missing entries of the list */
            memset(&files[nf], 0, sizeof files[nf]);
            files[nf++].path = xstrdup(p);
        }
        free(list);
        if (nf == 0) {
            errf(e, "kubeconfig: no file of KUBECONFIG=%s exists; point KUBECONFIG to your cluster's kubeconfig",
                 env);
            return -1;
        }
        k->source = xstrdup(env);
    } else {
        char *home = home_dir();
        char *p = xasprintf("%s/.kube/config", home);
        free(home);
        if (access(p, F_OK) < 0) {
            errf(e, "kubeconfig: %s does not exist and KUBECONFIG is not set; copy your cluster's kubeconfig "
                    "there or set KUBECONFIG", p);
            free(p);
            return -1;
        }
        memset(&files[0], 0, sizeof files[0]);
        files[nf++].path = p;
        k->source = xstrdup(p);
    }
    for (int i = 0; i < nf; i++)
        if (load_one(&files[i], e) < 0)
            goto out;

    const char *ctx = NULL;
    for (int i = 0; i < nf && !ctx; i++)
        ctx = map_str(&files[i].doc, yaml_document_get_root_node(&files[i].doc), "current-context");
    if (!ctx) {
        errf(e, "kubeconfig %s: no current-context; select one with `kubectl config use-context NAME`", k->source);
        goto out;
    }
    k->context = xstrdup(ctx);
    yaml_node_t *cn = NULL;
    struct kfile *cf = NULL;
    for (int i = 0; i < nf && !cn; i++)
        if ((cn = named(&files[i].doc, "contexts", "context", ctx)))
            cf = &files[i];
    if (!cn) {
        errf(e, "kubeconfig %s: current-context \"%s\" is not among its contexts; fix current-context", k->source,
             ctx);
        goto out;
    }
    const char *cluster = map_str(&cf->doc, cn, "cluster"), *user = map_str(&cf->doc, cn, "user");
    const char *ns = map_str(&cf->doc, cn, "namespace");
    if (ns)
        k->namespace = xstrdup(ns);
    if (!cluster) {
        errf(e, "kubeconfig %s: context \"%s\" names no cluster", k->source, ctx);
        goto out;
    }
    k->cluster = xstrdup(cluster);
    yaml_node_t *cl = NULL;
    struct kfile *clf = NULL;
    for (int i = 0; i < nf && !cl; i++)
        if ((cl = named(&files[i].doc, "clusters", "cluster", cluster)))
            clf = &files[i];
    if (!cl) {
        errf(e, "kubeconfig %s: context \"%s\" names cluster \"%s\", which is not defined under clusters",
             k->source, ctx, cluster);
        goto out;
    }
    const char *server = map_str(&clf->doc, cl, "server");
    if (!server || (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0)) {
        errf(e, "kubeconfig %s: cluster \"%s\" has %s server URL; set clusters[].cluster.server to "
                "https://HOST:PORT", k->source, cluster, server ? "no http(s)" : "no");
        goto out;
    }
    k->server = xstrdup(server);
    size_t sl = strlen(k->server);
    while (sl > 0 && k->server[sl - 1] == '/')
        k->server[--sl] = '\0';
    const char *v;
    if ((v = map_str(&clf->doc, cl, "certificate-authority-data"))) {
        if (decode_data("certificate-authority-data", clf->path, v, &k->ca_pem, &k->ca_len, e) < 0)
            goto out;
    } else if ((v = map_str(&clf->doc, cl, "certificate-authority"))) {
        k->ca_file = rel_path(clf, v);
        if (access(k->ca_file, R_OK) < 0) {
            errf(e, "kubeconfig %s: certificate-authority %s of cluster \"%s\": %s", clf->path, k->ca_file, cluster,
                 strerror(errno));
            goto out;
        }
    }
    v = map_str(&clf->doc, cl, "insecure-skip-tls-verify");
    k->insecure = v && strcmp(v, "true") == 0;

    if (user) {
        k->user = xstrdup(user);
        yaml_node_t *un = NULL;
        struct kfile *uf = NULL;
        for (int i = 0; i < nf && !un; i++)
            if ((un = named(&files[i].doc, "users", "user", user)))
                uf = &files[i];
        if (!un) {
            errf(e, "kubeconfig %s: context \"%s\" names user \"%s\", which is not defined under users", k->source,
                 ctx, user);
            goto out;
        }
        if (map_get(&uf->doc, un, "exec") || map_get(&uf->doc, un, "auth-provider")) {
            errf(e, "kubeconfig %s: user \"%s\" uses an exec/auth-provider plugin, which trialq does not run; "
                    "use a token or a client certificate (e.g. a service account token)", uf->path, user);
            goto out;
        }
        if ((v = map_str(&uf->doc, un, "token"))) {
            k->token = xstrdup(v);
        } else if ((v = map_str(&uf->doc, un, "tokenFile"))) {
            char *p = rel_path(uf, v);
            char *t = read_file(p, NULL);
            if (!t) {
                errf(e, "kubeconfig %s: tokenFile %s of user \"%s\": %s", uf->path, p, user, strerror(errno));
                free(p);
                goto out;
            }
            free(p);
            size_t tl = strlen(t);
            while (tl && (t[tl - 1] == '\n' || t[tl - 1] == '\r' || t[tl - 1] == ' '))
                t[--tl] = '\0';
            k->token = t;
        }
        if ((v = map_str(&uf->doc, un, "client-certificate-data"))) {
            if (decode_data("client-certificate-data", uf->path, v, &k->cert_pem, &k->cert_len, e) < 0)
                goto out;
        } else if ((v = map_str(&uf->doc, un, "client-certificate"))) {
            k->cert_file = rel_path(uf, v);
        }
        if ((v = map_str(&uf->doc, un, "client-key-data"))) {
            if (decode_data("client-key-data", uf->path, v, &k->key_pem, &k->key_len, e) < 0)
                goto out;
        } else if ((v = map_str(&uf->doc, un, "client-key"))) {
            k->key_file = rel_path(uf, v);
        }
        const char *files_to_check[] = {k->cert_file, k->key_file};
        for (int i = 0; i < 2; i++)
            if (files_to_check[i] && access(files_to_check[i], R_OK) < 0) {
                errf(e, "kubeconfig %s: %s of user \"%s\": %s", uf->path, files_to_check[i], user, strerror(errno));
                goto out;
            }
        if ((k->cert_pem || k->cert_file) != (k->key_pem || k->key_file)) {
            errf(e, "kubeconfig %s: user \"%s\" has a client certificate without its key (or a key without its "
                    "certificate); set both client-certificate(-data) and client-key(-data)", uf->path, user);
            goto out;
        }
        if ((v = map_str(&uf->doc, un, "username")))
            k->username = xstrdup(v);
        if ((v = map_str(&uf->doc, un, "password")))
            k->password = xstrdup(v);
    }
    rc = 0;
out:
    for (int i = 0; i < nf; i++) {
        if (files[i].loaded)
            yaml_document_delete(&files[i].doc);
        free(files[i].path);
    }
    if (rc < 0) {
        kube_conn_clear(k);
    }
    return rc;
}

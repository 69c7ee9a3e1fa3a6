/* kube/api.c: the checks of the Kubernetes API at start (workers/kube/skeleton.h): the
 * server answers, serves the flavour's API group, version and resource, and lets us
 * list it in the namespace; a refusal explained with the context's user. */
#include <stdlib.h>
#include <string.h>

#include "workers/kube/skeleton.h"

/* ---------------- API checks at start ---------------- */

static const char *user_desc(const struct kube_conn *k)
{
    if (k->token) return "its bearer token";
    if (k->cert_file || k->cert_pem) return "its client certificate";
    return "no credentials";
}

/* A first answer that is not what we need becomes a message naming what to fix. */
int kube_explain(struct kube_state *ks, const char *what, long status, const cJSON *resp, struct errbuf *e)
{
    struct kube_conn *k = &ks->conn;
    if (status == 401)
        return errf(e, "the Kubernetes API server %s answered 401 Unauthorized to %s: user \"%s\" of context \"%s\" "
                       "in %s (%s) is not accepted; renew the token or client certificate in the kubeconfig",
                    k->server, what, k->user ? k->user : "", k->context, k->source, user_desc(k));
    if (status == 403)
        return errf(e, "the Kubernetes API server %s answered 403 Forbidden to %s: user \"%s\" of context \"%s\" "
                       "lacks RBAC rights (%s); grant get, list, create, delete on %s.%s in namespace %s (see "
                       "docs/platforms/%s.md)",
                    k->server, what, k->user ? k->user : "", k->context, kube_status_message(resp, status),
                    ks->plural, ks->group, ks->ns, ks->platform);
    return errf(e, "the Kubernetes API server %s answered %ld to %s: %s", k->server, status, what,
                kube_status_message(resp, status));
}

/* The API group's answer serves ks->version: 0, or -1 with e. */
static int served_version(struct kube_state *ks, const cJSON *group, struct errbuf *e)
{
    const cJSON *v;
    int found = 0;
    struct strbuf served;
    sb_init(&served);
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(group, "versions")) {
        const char *ver = kube_jstr(v, "version", NULL);
        if (!ver)
            continue;
        if (served.len)
            sb_puts(&served, ", ");
        sb_puts(&served, ver);
        if (strcmp(ver, ks->version) == 0)
            found = 1;
    }
    if (!found)
        errf(e, "the API group %s on %s serves version(s) %s, not %s; set apiVersion to a served version (or "
                "upgrade the operator)",
             ks->group, ks->conn.server, served.len ? served.buf : "none", ks->version);
    sb_free(&served);
    return found ? 0 : -1;
}

/* The group's version has the resource ks->plural: 0, or -1 with e. */
static int has_resource(struct kube_state *ks, struct errbuf *e)
{
    long st;
    cJSON *r = NULL;
    struct errbuf ee;
    char *path = xasprintf("/apis/%s/%s", ks->group, ks->version);
    int rc = kube_request(&ks->conn, "GET", path, NULL, &st, &r, &ee);
    free(path);
    if (rc < 0)
        return errf(e, "Kubernetes API server %s: %s", ks->conn.server, ee.msg);
    int found = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(r, "resources"))
        if (strcmp(kube_jstr(v, "name", ""), ks->plural) == 0)
            found = 1;
    cJSON_Delete(r);
    if (st != 200 || !found)
        return errf(e, "%s/%s on %s has no resource %s: %s", ks->group, ks->version, ks->conn.server, ks->plural,
                    ks->fl->operator_hint(ks));
    return 0;
}

/* May we list (and so, with the same role, create and delete) in the namespace? */
static int may_list(struct kube_state *ks, struct errbuf *e)
{
    long st;
    cJSON *r = NULL;
    struct errbuf ee;
    char *path = xasprintf("/apis/%s/%s/namespaces/%s/%s?limit=1", ks->group, ks->version, ks->ns, ks->plural);
    int rc = kube_request(&ks->conn, "GET", path, NULL, &st, &r, &ee);
    free(path);
    if (rc < 0)
        return errf(e, "Kubernetes API server %s: %s", ks->conn.server, ee.msg);
    if (st != 200) {
        char *what = xasprintf("list %s in namespace %s", ks->plural, ks->ns);
        kube_explain(ks, what, st, r, e);
        free(what);
        rc = -1;
    }
    cJSON_Delete(r);
    return rc;
}

/* The API server, the API group and version, the resource and the right to list it. */
int kube_check_api(struct kube_state *ks, struct errbuf *e)
{
    struct kube_conn *k = &ks->conn;
    long st;
    cJSON *r = NULL;
    struct errbuf ee;
    char *path = xasprintf("/apis/%s", ks->group);
    int rc = -1;
    if (kube_request(k, "GET", path, NULL, &st, &r, &ee) < 0)
        errf(e, "cannot reach the Kubernetes API server %s (cluster \"%s\" of context \"%s\" in %s): %s; check "
                "clusters[].cluster.server and that the cluster is up",
             k->server, k->cluster, k->context, k->source, ee.msg);
    else if (st == 404)
        errf(e, "the Kubernetes API server %s does not serve the API group %s (no %s custom resource definition): "
                "%s",
             k->server, ks->group, ks->kindname, ks->fl->operator_hint(ks));
    else if (st != 200)
        kube_explain(ks, path, st, r, e);
    else
        rc = served_version(ks, r, e) < 0 || has_resource(ks, e) < 0 || may_list(ks, e) < 0 ? -1 : 0;
    cJSON_Delete(r);
    free(path);
    return rc;
}

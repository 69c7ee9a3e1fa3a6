/* remote/poll.c: one exec per machine and poll (workers/remote/remote.h): the queued starts
 * and the state of every trial held there, with the bytes its files gained, applied
 * to the local mirrors and the trials' states. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "schema/worker_rows.h"
#include "workers/remote/remote.h"

static int append_file(const char *path, const char *buf, size_t n)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    size_t off = 0;
    while (off < n) {
        ssize_t r = write(fd, buf + off, n - off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            close(fd);
            return -1;
        }
        off += (size_t)r;
    }
    return close(fd);
}

static const char *const mirror_files[3] = {".nni/metrics", "trial.stdout", "trial.stderr"};

/* A here-document delimiter / end marker that does not occur in the text. */
void remote_unique_tag(const char *text, char tag[32])
{
    do {
        unsigned char r[8];
        random_bytes(r, sizeof r);
        snprintf(tag, 32, "TQ_EOF_%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
    } while (text && strstr(text, tag));
}

/* One batch for a machine: its queued starts, then the status of every trial this
 * worker holds there (with the mirrors' sizes as offsets). */
struct batch {
    struct rmachine *m;
    struct strbuf script;
    char marker[48];
    int *idx, n, nsub;
};

static int batch_build(struct worker *w, struct rmachine *m, struct batch *b)
{
    struct remote_state *rs = w->platform;
    memset(b, 0, sizeof *b);
    b->m = m;
    sb_init(&b->script);
    b->nsub = m->npending;
    char *code = xasprintf("%s/nni-code", m->root);
    for (int i = 0; i < b->nsub; i++) {
        struct launch *l = &m->pending[i];
        char tag[32];
        remote_unique_tag(l->script, tag);
        sb_puts(&b->script, "tq_submit ");
        sh_quote(&b->script, l->rdir);
        sb_printf(&b->script, " %d ", l->attempt);
        sh_quote(&b->script, code);
        sb_printf(&b->script, " <<'%s'\n%s%s\n", tag, l->script, tag);
    }
    free(code);
    sb_printf(&b->script, "tq_status %d", STATUS_CAP);
    b->idx = xcalloc((size_t)w->ntrials + 1, sizeof *b->idx);
    for (int i = 0; i < w->ntrials; i++) {
        struct trial *t = &w->trials[i].t;
        int att = 0;
        if (strcmp(t->status, "RUNNING") != 0 || remote_machine_of_job(rs, t->job_id, &att) != m || att != t->attempt)
            continue;
        char *rdir = trial_dir_default(m->root, t->id);
        char *ldir = remote_local_dir_of(w, t->id);
        sb_puts(&b->script, " ");
        sh_quote(&b->script, rdir);
        sb_printf(&b->script, " %d", t->attempt);
        for (int f = 0; f < 3; f++) {
            char *p = xasprintf("%s/%s", ldir, mirror_files[f]);
            sb_printf(&b->script, " %lld", (long long)remote_file_size(p));
            free(p);
        }
        free(rdir);
        free(ldir);
        b->idx[b->n++] = i;
    }
    char tag[32];
    remote_unique_tag(NULL, tag);
    snprintf(b->marker, sizeof b->marker, "%s\n", tag);
    sb_printf(&b->script, "\necho %s\n", tag);
    return b->n + b->nsub;
}

static void batch_free(struct batch *b)
{
    sb_free(&b->script);
    free(b->idx);
}

const char *remote_status_parse(const char *p, const char *end, int n, struct remote_status *h)
{
    if ((size_t)(end - p) < 7 || strncmp(p, "status\n", 7) != 0)
        return NULL;
    p += 7;
    /* headers "<state> <rc> <end> <stopped> <n1> <n2> <n3> [<fault>]", then "data" and the
     * bytes in order */
    for (int i = 0; i < n; i++) {
        int used = 0, wused = 0;
        char word[12] = "";
        if (sscanf(p, "%c %d %lld %d %lld %lld %lld%n", &h[i].state, &h[i].rc, &h[i].end, &h[i].stopped,
                   &h[i].len[0], &h[i].len[1], &h[i].len[2], &used) < 7 || !used)
            return NULL;
        p += used;
        if (*p == ' ' && (sscanf(p, " %11[-a-z]%n", word, &wused) < 1 || !wused))
            return NULL;
        p += wused;
        if (*p++ != '\n')
            return NULL;
        h[i].fault = strcmp(word, "full") == 0       ? ENOSPC
                     : strcmp(word, "readonly") == 0 ? EROFS
                     : strcmp(word, "ioerror") == 0  ? EIO
                                                     : 0;
    }
    if ((size_t)(end - p) < 5 || strncmp(p, "data\n", 5) != 0)
        return NULL;
    return p + 5;
}

/* Applies a machine's answer: submit results, states, new bytes into the mirrors. */
/* The runner's answers to the batch's starts ("submit ok" / "submit error <why>"), one
 * line each: the answered starts leave the queue (the rest go again next time). Returns
 * where the answers end, or NULL when not every start was answered. */
static const char *apply_submits(struct remote_state *rs, struct batch *b, const char *p, const char *end)
{
    struct rmachine *m = b->m;
    int answered = 0;
    for (int i = 0; i < b->nsub; i++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl || strncmp(p, "submit ", 7) != 0)
            break;
        struct launch *l = &m->pending[i];
        if (strncmp(p + 7, "error ", 6) == 0) {
            struct rtrial *r = remote_rtrial_get(rs, l->id, 1);
            r->attempt = l->attempt;
            r->state = 'E';
            snprintf(r->why, sizeof r->why, "machine %s cannot start it: %.*s", m->display,
                     (int)(nl - (p + 13) > 100 ? 100 : nl - (p + 13)), p + 13);
        }
        answered++;
        p = nl + 1;
    }
    for (int i = 0; i < answered; i++) {
        free(m->pending[i].rdir);
        free(m->pending[i].script);
    }
    if (answered) {
        memmove(m->pending, m->pending + answered, sizeof *m->pending * (size_t)(m->npending - answered));
        m->npending -= answered;
    }
    return answered < b->nsub ? NULL : p;
}

/* Appends the bytes each mirrored file gained (h->len[f] of them at *p) to the trial's
 * local mirror; r->complete when no file hit STATUS_CAP. -1: fewer bytes than announced. */
static int apply_bytes(struct worker *w, const struct trial *t, struct rtrial *r, const struct remote_status *h,
                       const char **p, const char *end)
{
    char *ldir = remote_local_dir_of(w, t->id);
    int rc = 0;
    r->complete = 1;
    for (int f = 0; f < 3 && rc == 0; f++) {
        long long len = h->len[f];
        if (len < 0 || len > end - *p) {
            rc = -1;
            break;
        }
        if (len > 0) {
            char *path = xasprintf("%s/%s", ldir, mirror_files[f]);
            if (append_file(path, *p, (size_t)len) < 0)
                log_warn("trial %s: cannot write %s: %s", t->id, path, strerror(errno));
            free(path);
        }
        if (len == STATUS_CAP)
            r->complete = 0;
        *p += len;
    }
    free(ldir);
    return rc;
}

/* The state the runner reports for trial t on machine m. */
static void apply_state(struct worker *w, struct rmachine *m, struct trial *t, struct rtrial *r,
                        const struct remote_status *h)
{
    if (r->state == 'E')
        return; /* keeps the reason until poll reports it */
    r->state = h->state;
    r->rc = h->rc;
    r->end = h->end;
    r->stopped = h->stopped;
    r->fault = h->fault;
    if (h->state != 'N')
        return;
    if (r->killed) {
        /* asked to end before it ever started: it ends without running */
        r->state = 'F';
        r->rc = 143;
        r->end = now_ms();
        r->stopped = 1;
        return;
    }
    /* never started there (a worker died before its batch went out): start it now */
    int queued = 0;
    for (int i = 0; i < m->npending && !queued; i++)
        queued = strcmp(m->pending[i].id, t->id) == 0;
    if (!queued) {
        log_info("trial %s: not started on %s yet; starting it", t->id, m->label);
        remote_pending_add(w, m, t);
    }
}

static void batch_apply(struct worker *w, struct batch *b, const char *p, const char *end)
{
    struct remote_state *rs = w->platform;
    struct rmachine *m = b->m;
    p = apply_submits(rs, b, p, end);
    if (!p) {
        log_warn("machine %s: malformed answer of the runner", m->label);
        return;
    }
    struct remote_status *h = xcalloc((size_t)b->n + 1, sizeof *h);
    p = remote_status_parse(p, end, b->n, h);
    if (!p) {
        log_warn("machine %s: malformed status answer", m->label);
        free(h);
        return;
    }
    for (int k = 0; k < b->n; k++) {
        struct trial *t = &w->trials[b->idx[k]].t;
        struct rtrial *r = remote_rtrial_get(rs, t->id, 1);
        r->attempt = t->attempt;
        if (apply_bytes(w, t, r, &h[k], &p, end) < 0) {
            log_warn("machine %s: status answer shorter than announced", m->label);
            break;
        }
        apply_state(w, m, t, r, &h[k]);
    }
    free(h);
    int64_t now = mono_ms();
    if (now - m->seen_written_ms > 5000) {
        struct errbuf e2;
        if (machine_set_seen(w->db, m->row_id, &e2) < 0)
            log_limited(LOG_WARN, "machine %s: cannot record it seen: %s", m->label, e2.msg);
        m->seen_written_ms = now;
    }
}

/* One round trip per machine, all machines at once: every batch is sent before any
 * answer is read, so the machines work in parallel. */
void remote_refresh_all(struct worker *w)
{
    struct remote_state *rs = w->platform;
    struct batch *b = xcalloc((size_t)rs->n, sizeof *b);
    int64_t now = mono_ms();
    for (int i = 0; i < rs->n; i++) {
        struct rmachine *m = &rs->m[i];
        b[i].m = NULL;
        if (!m->shell)
            continue;
        m->snap_ms = now;
        if (batch_build(w, m, &b[i]) == 0) {
            batch_free(&b[i]);
            b[i].m = NULL;
            continue;
        }
        struct errbuf e;
        if (ssh_shell_send(m->shell, b[i].script.buf, b[i].script.len, &e) < 0) {
            remote_conn_lost(w, m, e.msg); /* the queued starts stay queued: resent after reconnecting */
            batch_free(&b[i]);
            b[i].m = NULL;
        }
    }
    for (int i = 0; i < rs->n; i++) {
        if (!b[i].m)
            continue;
        struct rmachine *m = b[i].m;
        struct strbuf out;
        sb_init(&out);
        struct errbuf e;
        if (m->shell && ssh_shell_recv(m->shell, b[i].marker, &out, &e) == 0)
            batch_apply(w, &b[i], out.buf ? out.buf : "", (out.buf ? out.buf : "") + out.len);
        else if (m->shell)
            remote_conn_lost(w, m, e.msg);
        sb_free(&out);
        batch_free(&b[i]);
    }
    free(b);
}

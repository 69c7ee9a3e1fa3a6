/* remote/gpu.c: the remote platform's GPUs (workers/remote/remote.h): nvidia-smi over SSH
 * into each machine's inventory, and the claim of a trial on the machine whose GPUs
 * it gets (queue_claim_on). */
#include <stdlib.h>
#include <string.h>

#include "workers/remote/remote.h"

/* The machine's GPUs from nvidia-smi over SSH (NNI's collector runs it every 5 s),
 * into the gpu table; a failure is stored as the machine's GPU error. */
void remote_gpu_refresh_machine(struct worker *w, struct rmachine *m, int force)
{
    struct remote_state *rs = w->platform;
    int64_t now = mono_ms();
    if (!rs->gpus || !m->conn || (!force && now - m->gpu_ms < GPU_REFRESH_MS))
        return;
    m->gpu_ms = now;
    struct strbuf cmd, out;
    sb_init(&cmd);
    sb_init(&out);
    remote_cmd_prefix(&cmd, m);
    sb_puts(&cmd, GPU_NVSMI_COMMAND);
    int st = 0;
    struct errbuf e, e2;
    struct gpu_info *g = NULL;
    int n = 0;
    if (remote_run_cmd(m, cmd.buf, NULL, 0, &out, &st, &e) < 0) {
        remote_conn_lost(w, m, e.msg);
    } else if (st != 0 || gpu_parse_nvsmi(out.buf ? out.buf : "", out.len, &g, &n, &e) < 0) {
        char msg[1400];
        snprintf(msg, sizeof msg, "nvidia-smi on %s: %s", m->display, e.msg);
        if (gpu_store(w->db, m->row_id, NULL, 0, msg, &e2) < 0)
            log_warn("machine %s: %s", m->label, e2.msg);
    } else if (gpu_store(w->db, m->row_id, g, n, NULL, &e2) < 0) {
        log_warn("machine %s: cannot store its GPUs: %s", m->label, e2.msg);
    }
    free(g);
    sb_free(&cmd);
    sb_free(&out);
}

int remote_held_on(struct worker *w, struct rmachine *m)
{
    struct remote_state *rs = w->platform;
    int n = 0;
    for (int i = 0; i < w->ntrials; i++)
        if (remote_machine_of_job(rs, w->trials[i].t.job_id, NULL) == m)
            n++;
    return n;
}

int remote_can_claim(struct worker *w)
{
    struct remote_state *rs = w->platform;
    /* (no trial is claimed once a stop is asked for: the queue's claim checks that for
     * every platform) */
    struct errbuf e;
    int any = 0;
    for (int i = 0; i < rs->n; i++)
        if (remote_machine_usable(w, &rs->m[i]))
            any = 1;
    if (!any) {
        struct strbuf why;
        sb_init(&why);
        sb_puts(&why, "no machine is reachable");
        for (int i = 0; i < rs->n; i++)
            sb_printf(&why, "%s%s: %.200s", i ? "; " : " (", rs->m[i].display,
                      rs->m[i].last_error ? rs->m[i].last_error : "not connected");
        sb_puts(&why, ")");
        queue_set_waiting_reason(w->db, w->exp_id, w->ops->name, why.buf, &e);
        sb_free(&why);
    }
    return any;
}

void remote_refresh(struct worker *w)
{
    struct remote_state *rs = w->platform;
    for (int i = 0; i < rs->n; i++)
        remote_gpu_refresh_machine(w, &rs->m[i], 0);
}

/* With GPUs: one claim per machine (least loaded first) that has the slots, in the same
 * transaction as the trial; the trial then starts there. Without: a plain claim. */
int remote_claim(struct worker *w, struct trial *out, struct errbuf *e)
{
    struct remote_state *rs = w->platform;
    if (!rs->gpus)
        return queue_claim(w->db, w->exp_id, w->ops->name, w->owner, w->lease_ms, out, e);
    struct strbuf why;
    sb_init(&why);
    int *order = xcalloc((size_t)rs->n + 1, sizeof *order), n = 0;
    for (int i = 0; i < rs->n; i++)
        if (rs->m[i].conn && rs->m[i].row_id)
            order[n++] = i;
    for (int a = 1; a < n; a++) /* least loaded first */
        for (int b = a; b > 0 && remote_held_on(w, &rs->m[order[b]]) < remote_held_on(w, &rs->m[order[b - 1]]); b--) {
            int x = order[b];
            order[b] = order[b - 1];
            order[b - 1] = x;
        }
    for (int k = 0; k < n; k++) {
        struct rmachine *m = &rs->m[order[k]];
        char reason[256] = "";
        int rc = queue_claim_on(w->db, w->exp_id, w->ops->name, w->owner, w->lease_ms, m->row_id, &m->need, out,
                                reason, sizeof reason, e);
        if (rc < 0) {
            sb_free(&why);
            free(order);
            return -1;
        }
        if (rc == 1) {
            snprintf(rs->claimed_id, sizeof rs->claimed_id, "%s", out->id);
            rs->claimed_on = m;
            sb_free(&why);
            free(order);
            return 1;
        }
        if (reason[0]) {
            /* "needs 2 GPUs; host a has 1 free, 0 idle": one clause per machine */
            const char *semi = strstr(reason, "; ");
            if (!why.len || !semi)
                sb_puts(&why, why.len ? "; " : "");
            sb_puts(&why, why.len && semi ? semi : reason);
        }
    }
    if (why.len) {
        struct errbuf e2;
        queue_set_waiting_reason(w->db, w->exp_id, w->ops->name, why.buf, &e2);
    }
    sb_free(&why);
    free(order);
    return 0;
}

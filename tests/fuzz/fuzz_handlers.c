/* fuzz_handlers.c: the REST handlers (api/routes_*.c), in-process, through the route
 * table's dispatch (api/routes.c) as the api serves them: a real SQLite database
 * (migrated by schema/) in the target's temporary directory, with an experiment made
 * as nnictl makes one (its TPE tuner and Medianstop assessor loaded as the api loads
 * them), trials the scheduler asked the tuner for, claimed, run, given intermediate
 * and final metrics and ended through the queue/ and schema/ functions the workers
 * use (with their events); the trials' files and the experiment's logs on disk; an
 * api struct as api/server.c builds it: the event loop, evhttp with the route table
 * (routes_register) and the front door (guard_new) on a listener. The listener is a
 * Unix socket in the temporary directory (no port, nothing from outside): each input
 * is one request written into a new connection, and the event loop runs until the
 * reply has come back whole (the api closes the connection: the request says
 * Connection: close).
 *
 * An input is a request in a short form, after an optional setup byte:
 *     SETUP                      a byte below 0x20 (no method starts so): its bit 0 runs
 *                                the api in view mode (nnictl view: read only, no tuner
 *                                or assessor loaded), its bit 1 as listening beyond
 *                                loopback (bind address 0.0.0.0: changes need the token,
 *                                "t", in X-Trialq-Token); none: the api as nnictl create
 *                                starts it, on loopback (a change without the right
 *                                token is refused by the front door, guard.c, from the
 *                                head; run_route's own check of it answers only where
 *                                evhttp reads the header otherwise than guard.c does)
 *     METHOD TARGET\n            e.g. GET /api/v1/nni/trial-jobs/$T1?offset=2
 *     Name: value\n              headers, optional (Origin, Host, X-Trialq-Token...)
 *     \n
 *     BODY                       the rest, sent with its Content-Length
 * "$T0" to "$T9" in it stand for the trials' ids (by sequence: random at setup, so
 * the seeds name them so; past the last trial, an id that none has), "$E" for the
 * experiment's; in the body, "$W0" to "$W9" stand for 64 KiB to 32 MiB of spaces (2^16
 * to 2^25: JSON stays JSON while the body reaches the routes' limits, api/http_util.h,
 * beyond what a libFuzzer input holds; tests/fuzz/handlers.options gives this target a
 * -max_len for big documents themselves; the seeds use only $W0: an input that expands
 * to megabytes costs a tenth of a second, and libFuzzer picks small seeds often, so seeds
 * with $W4..$W9 cut the target's runs per second six-fold). Content-Length, Transfer-Encoding
 * and Connection lines of the input are left out (the harness frames the request).
 *
 * Every route runs, those that change state too (PUT /experiment, DELETE /experiment,
 * POST /trial-jobs, rerun, import-data...): after every input but a GET, and after a
 * GET that changed the database (sqlite3_total_changes), the database is restored
 * from a copy taken after setup (sqlite3_backup, a few pages) and the api's experiment
 * state is loaded again (its tuner, assessor, config), so every input starts from the
 * same state. Excluded: nothing is left out of the route table. The routes that start
 * processes are POST /tensorboard and PUT /tensorboard/:id (TensorBoard): the harness
 * runs the api with PATH naming an empty directory, so they run up to looking for the
 * tensorboard executable and answer 400 (their body and trial parsing are fuzzed);
 * the experiment's tuner and assessor are built-in (no dispatcher process) and the api
 * starts no worker (no children). A fork is a finding (abort: the harness defines
 * fork), as are: no reply within 8 s, a reply that is not HTTP, and a 5xx
 * reply (the database is healthy: a request it cannot serve is the client's error and
 * gets a 4xx naming it; a 500 means a handler failed on its input; evhttp's own 501 for
 * a method it does not know is not one). The temporary directory is on /dev/shm when
 * TMPDIR is unset (commits and nni.sqlite's fsyncs cost milliseconds on a disk).
 * FUZZ_HANDLERS_SHOW=1 prints each request and the start of its reply (to check seeds). */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <stdio.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <sqlite3.h>

#include "api/api.h"
#include "api/assess.h"
#include "api/guard.h"
#include "api/http_util.h"
#include "api/routes.h"
#include "api/scheduler.h"
#include "queue/queue.h"
#include "schema/nnidb.h"

#define EXP_ID "fuzzexp1"
#define MAX_TRIALS 10
#define REPLY_TIMEOUT_S 8

static struct api A;
static sqlite3 *pristine; /* the database as setup left it */
static char trial_ids[MAX_TRIALS][8];
static int ntrials;
static char *sock_path, *nnidb;
static int64_t changes_at_rest; /* sqlite3_total_changes after the last restore */

/* The api's setups an input's first byte selects (see the top): bits of mode. */
#define MODE_VIEW 1            /* nnictl view: read only, no tuner (server.c, --action view) */
#define MODE_BEYOND_LOOPBACK 2 /* listening on 0.0.0.0: changes need the token, EXP_TOKEN */
#define EXP_TOKEN "t"
static int mode; /* the setup the api's state was loaded with */

/* No handler may start a process here (see the top): the api's fork (common/spawn.c,
 * api/tensorboard.c, api/disp_proc.c) is this one, which makes it a finding with the
 * stack that led to it. (The sanitizers' symbolizer starts its own way.) */
pid_t fork(void)
{
    fprintf(stderr, "fuzz_handlers: a request made the api start a process\n");
    abort();
}

static void fail(const char *what, const char *msg)
{
    fprintf(stderr, "fuzz_handlers setup: %s: %s\n", what, msg);
    abort();
}

static void put_file(const char *dir, const char *name, const char *text)
{
    if (mkdir_p(dir, 0700) < 0)
        fail("mkdir", dir);
    char *p = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        fail("write", p);
    free(p);
}

/* The api's experiment state as api/server.c's load_experiment loads it: the row, its
 * config from the stored JSON, the tuner (and its view of the trials), the assessor. */
static void load_state(void)
{
    struct errbuf e;
    A.next_index = -1;
    A.stopping = 0;
    memset(&A.trial_span, 0, sizeof A.trial_span);
    if (exp_load(A.db, A.exp_id, &A.exp, &e) != 1)
        fail("exp_load", e.msg);
    if (config_from_json(A.exp.config, &A.cfg, &e) < 0)
        fail("config_from_json", e.msg);
    /* view mode loads no tuner or assessor (server.c's load_experiment) */
    A.tuner = NULL;
    if (!A.readonly && (sched_load_tuner(&A, &e) < 0 || assess_init(&A, &e) < 0))
        fail("tuner", e.msg);
    if (mode & MODE_BEYOND_LOOPBACK) { /* as `--bind 0.0.0.0` stores it: changes need the token */
        free(A.exp.bind_address);
        A.exp.bind_address = xstrdup("0.0.0.0");
    }
}

/* The experiment as nnictl create stores it, RUNNING. */
static void make_experiment(const char *dir, const char *exp_dir)
{
    struct errbuf e;
    char *code = xasprintf("%s/code", dir);
    put_file(code, "train.py", "print('hello')\n");
    char *yml = xasprintf("%s/config.yml", dir);
    char *text = xasprintf("experimentName: fuzz\nsearchSpace:\n  lr: {_type: loguniform, _value: [0.0001, 0.1]}\n"
                           "  units: {_type: choice, _value: [16, 32, 64]}\n  depth: {_type: randint, _value: [1, 5]}\n"
                           "trialCommand: python3 train.py\ntrialCodeDirectory: %s\ntrialConcurrency: 3\n"
                           "maxTrialNumber: 8\nmaxExperimentDuration: 1h\n"
                           "tuner: {name: TPE, classArgs: {optimize_mode: maximize}}\n"
                           "assessor: {name: Medianstop, classArgs: {optimize_mode: maximize}}\n"
                           "trainingService: {platform: local}\n", code);
    put_file(dir, "config.yml", text);
    struct exp_config *cfg = NULL;
    if (config_load(yml, &cfg, &e) < 0)
        fail("config_load", e.msg);
    char *config = cJSON_PrintUnformatted(cfg->canonical);
    char *space = cJSON_PrintUnformatted(cfg->search_space);
    struct experiment x = {.id = EXP_ID, .name = "fuzz", .config = config, .search_space = space,
                           .platform = "local", .exp_dir = (char *)exp_dir, .bind_address = "127.0.0.1",
                           .url_prefix = "", .start_time = now_ms(), .concurrency = 3, .seed = 7, .token = EXP_TOKEN,
                           .max_trial_number = 8, .max_exec_seconds = 3600};
    if (exp_insert(A.db, &x, &e) < 0 || exp_transition(A.db, EXP_ID, NULL, "RUNNING", "create", &e) < 0)
        fail("exp_insert", e.msg);
    config_free(cfg);
    free(config);
    free(space);
    free(text);
    free(yml);
    free(code);
}

/* One metric as a trial sends it, stored as the worker stores it. */
static void add_metric(const char *trial_id, const char *type, int seq, double v)
{
    struct errbuf e;
    char *rec = xasprintf("{\"parameter_id\":0,\"trial_job_id\":\"%s\",\"type\":\"%s\",\"sequence\":%d,"
                          "\"value\":\"{\\\"default\\\": %g, \\\"loss\\\": %g}\"}", trial_id, type, seq, v, 1 - v);
    struct metric_in m;
    void *owned = NULL;
    if (metric_parse(rec, strlen(rec), &m, &owned, &e) < 0 || metric_insert(A.db, trial_id, 1, &m, &e) < 0)
        fail("metric", e.msg);
    metric_owned_free(owned);
    free(rec);
}

/* Trials as the scheduler and a local worker make them: 0 SUCCEEDED with metrics, 1
 * RUNNING with intermediate ones, 2 FAILED, the rest WAITING (queued by the tuner). */
static void make_trials(const char *exp_dir)
{
    struct errbuf e;
    sched_tick(&A);
    char *owner = queue_owner_id();
    for (int i = 0; i < 3; i++) {
        struct trial t;
        if (queue_claim(A.db, EXP_ID, "local", owner, 60000, &t, &e) != 1)
            fail("queue_claim", e.msg);
        char *dir = trial_dir_default(exp_dir, t.id);
        put_file(dir, "trial.log", "epoch 1\nepoch 2\n");
        put_file(dir, "trial.stdout", "loss 0.5\n");
        put_file(dir, "trial.stderr", "");
        put_file(dir, "model.txt", "weights\n");
        char *sub = xasprintf("%s/out", dir), *hidden = xasprintf("%s/.nni", dir);
        put_file(sub, "result.json", "{\"acc\": 0.9}\n");
        put_file(hidden, "metrics", "");
        if (trial_mark_running(A.db, t.id, owner, "pid-1", "localhost", dir, now_ms(), &e) != 1)
            fail("trial_mark_running", e.msg);
        for (int s = 0; s < 3 - i; s++)
            add_metric(t.id, "PERIODICAL", s, 0.1 * (s + 1) + 0.05 * i);
        if (i == 0) {
            add_metric(t.id, "FINAL", 3, 0.8);
            if (trial_finish(A.db, t.id, owner, "SUCCEEDED", 1, 0, now_ms(), NULL, &e) != 1)
                fail("trial_finish", e.msg);
        } else if (i == 2 && trial_finish(A.db, t.id, owner, "FAILED", 1, 1, now_ms(), "exit code 1", &e) != 1) {
            fail("trial_finish", e.msg);
        }
        free(sub);
        free(hidden);
        free(dir);
        trial_clear(&t);
    }
    free(owner);
    sched_tick(&A); /* the free slots filled again */
    char *ids = NULL;
    if (db_text(A.db, &e, &ids, "SELECT group_concat(id, ' ') FROM (SELECT id FROM trial ORDER BY sequence)", "") != 1)
        fail("trial ids", e.msg);
    for (char *s = ids, *save = NULL, *tok; ntrials < MAX_TRIALS && (tok = strtok_r(s, " ", &save)); s = NULL)
        snprintf(trial_ids[ntrials++], sizeof trial_ids[0], "%s", tok);
    free(ids);
    char *log = xasprintf("%s/log", exp_dir);
    put_file(log, "nnimanager.log", "[INFO] started\n");
    put_file(log, "dispatcher.log", "");
    free(log);
}

/* The event loop, evhttp with the route table and the front door, on a Unix socket. */
static void make_server(const char *dir)
{
    struct guard_limits limits;
    char err[200];
    if (guard_limits_from_env(&limits, err, sizeof err) < 0)
        fail("guard limits", err);
    A.base = event_base_new();
    A.http = evhttp_new(A.base);
    evhttp_set_timeout(A.http, 30);
    routes_register(&A);
    sock_path = xasprintf("%s/api.sock", dir);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(sock_path) >= sizeof sa.sun_path)
        fail("socket path too long", sock_path);
    strcpy(sa.sun_path, sock_path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 16) < 0)
        fail("listen", strerror(errno));
    struct evconnlistener *lev = evconnlistener_new(A.base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE, -1, fd);
    if (!lev || !evhttp_bind_listener(A.http, lev))
        fail("evhttp_bind_listener", sock_path);
    A.guard = guard_new(&A, lev, &limits, fd_limit_raise(), routes_head_policy);
}

static void setup(void)
{
    /* in memory where there is a tmpfs: the handlers' commits and nni.sqlite's fsyncs
     * would cost milliseconds per input on a disk */
    if (!getenv("TMPDIR") && access("/dev/shm", W_OK) == 0)
        setenv("TMPDIR", "/dev/shm", 1);
    const char *dir = fuzz_dir();
    struct errbuf e;
    /* no tensorboard to start (see the top) */
    char *bin = xasprintf("%s/empty-bin", dir);
    if (mkdir_p(bin, 0700) < 0)
        fail("mkdir", bin);
    setenv("PATH", bin, 1);
    free(bin);
    A.home = xstrdup(dir);
    A.exp_id = xstrdup(EXP_ID);
    A.log_level = "error";
    char *dbpath = trialq_db_path(A.home);
    if (db_open(dbpath, &A.db, &e) < 0)
        fail("db_open", e.msg);
    free(dbpath);
    char *exp_dir = xasprintf("%s/experiments/%s", dir, EXP_ID);
    make_experiment(dir, exp_dir);
    load_state();
    make_trials(exp_dir);
    nnidb = nnidb_path(exp_dir);
    free(exp_dir);
    /* the state every input starts from */
    api_free_state(&A);
    load_state();
    if (sqlite3_open(":memory:", &pristine) != SQLITE_OK)
        fail("sqlite3_open", ":memory:");
    sqlite3_backup *b = sqlite3_backup_init(pristine, "main", A.db->h, "main");
    if (!b || sqlite3_backup_step(b, -1) != SQLITE_DONE || sqlite3_backup_finish(b) != SQLITE_OK)
        fail("backup", sqlite3_errmsg(pristine));
    make_server(dir);
    changes_at_rest = sqlite3_total_changes64(A.db->h);
}

/* Back to the state setup left: the database copied back, nni.sqlite (PUT /experiment
 * writes it) removed, the api's experiment state loaded again. */
static void restore(void)
{
    sqlite3_backup *b = sqlite3_backup_init(A.db->h, "main", pristine, "main");
    if (!b || sqlite3_backup_step(b, -1) != SQLITE_DONE || sqlite3_backup_finish(b) != SQLITE_OK)
        fail("restore", sqlite3_errmsg(A.db->h));
    unlink(nnidb);
    api_free_state(&A);
    load_state();
    changes_at_rest = sqlite3_total_changes64(A.db->h);
}

/* ---------------- one request ---------------- */

/* s with $T0..$T9 and $E replaced by the trials' and the experiment's ids, and in a
 * body (body set) $W0..$W9 by 2^16..2^25 spaces (64 KiB to 32 MiB: JSON's whitespace,
 * so a document stays one while its body crosses the routes' limits, http_util.h). */
static void substitute(struct strbuf *out, const char *s, size_t n, int body)
{
    for (size_t i = 0; i < n; i++) {
        if (body && s[i] == '$' && i + 2 < n && s[i + 1] == 'W' && s[i + 2] >= '0' && s[i + 2] <= '9') {
            static char *spaces; /* the largest, made once */
            if (!spaces) {
                spaces = xmalloc(MAX_BODY);
                memset(spaces, ' ', MAX_BODY);
            }
            sb_add(out, spaces, (size_t)1 << (16 + s[i + 2] - '0'));
            i += 2;
        } else if (s[i] == '$' && i + 1 < n && s[i + 1] == 'E') {
            sb_puts(out, EXP_ID);
            i++;
        } else if (s[i] == '$' && i + 2 < n && s[i + 1] == 'T' && s[i + 2] >= '0' && s[i + 2] <= '9') {
            int k = s[i + 2] - '0';
            sb_puts(out, k < ntrials ? trial_ids[k] : "zzzzz");
            i += 2;
        } else {
            sb_add(out, s + i, 1);
        }
    }
}

static int framing_header(const char *line, size_t n)
{
    static const char *const names[] = {"content-length:", "transfer-encoding:", "connection:"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t l = strlen(names[i]);
        if (n >= l && strncasecmp(line, names[i], l) == 0)
            return 1;
    }
    return 0;
}

/* The HTTP request of an input into out; 0, or -1 when the input is not one. */
static int build_request(const char *p, size_t n, struct strbuf *out, int *get)
{
    const char *nl = memchr(p, '\n', n);
    if (!nl)
        return -1;
    size_t ml = strcspn(p, " \n");
    const char *target = p + ml + 1;
    if (ml == 0 || target >= nl || p[ml] != ' ')
        return -1;
    for (const char *c = p; c < nl; c++)
        if ((unsigned char)*c <= ' ' && c != p + ml)
            return -1; /* a method and a target of printable bytes */
    *get = ml == 3 && memcmp(p, "GET", 3) == 0;
    struct strbuf head, body;
    sb_init(&head);
    sb_init(&body);
    sb_add(out, p, ml + 1);
    substitute(out, target, (size_t)(nl - target), 0);
    sb_puts(out, " HTTP/1.1\r\n");
    int host = 0;
    const char *q = nl + 1, *end = p + n;
    while (q < end && *q != '\n') { /* header lines up to an empty one */
        const char *le = memchr(q, '\n', (size_t)(end - q));
        size_t l = le ? (size_t)(le - q) : (size_t)(end - q);
        const char *colon = memchr(q, ':', l);
        int ok = colon && colon > q && !memchr(q, '\r', l) && !memchr(q, '\0', l) && !framing_header(q, l);
        for (const char *c = q; ok && c < colon; c++)
            ok = *c > ' ' && *c < 127;
        if (ok) {
            host |= l >= 5 && strncasecmp(q, "host:", 5) == 0;
            substitute(&head, q, l, 0);
            sb_puts(&head, "\r\n");
        }
        q += l + (le != NULL);
    }
    if (q < end)
        q++; /* the empty line */
    substitute(&body, q, (size_t)(end - q), 1);
    sb_add(out, head.buf ? head.buf : "", head.len);
    sb_printf(out, "%sContent-Length: %zu\r\nConnection: close\r\n\r\n", host ? "" : "Host: 127.0.0.1\r\n", body.len);
    sb_add(out, body.buf ? body.buf : "", body.len);
    sb_free(&head);
    sb_free(&body);
    return 0;
}

struct client {
    int fd;
    const char *req;
    size_t len, sent;
    struct evbuffer *reply;
    struct event *rd, *wr, *timer;
    int done;
};

static void on_client_write(evutil_socket_t fd, short what, void *arg)
{
    struct client *c = arg;
    ssize_t w = send(fd, c->req + c->sent, c->len - c->sent, MSG_NOSIGNAL);
    if (w > 0)
        c->sent += (size_t)w;
    if (c->sent == c->len || (w < 0 && errno != EAGAIN && errno != EINTR))
        event_del(c->wr); /* all sent, or the api closed early (a refusal) */
}

static void on_client_read(evutil_socket_t fd, short what, void *arg)
{
    struct client *c = arg;
    int r = evbuffer_read(c->reply, fd, 64 << 10);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
        c->done = 1;
        event_base_loopbreak(A.base);
    }
}

static void on_client_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct client *c = arg;
    fprintf(stderr, "fuzz_handlers: no reply within %d s to:\n%.*s\n", REPLY_TIMEOUT_S, (int)c->len, c->req);
    abort();
}

/* The reply's status code (the connection closed after it); -1 when it is not HTTP. */
static int reply_status(struct evbuffer *b)
{
    char head[16];
    ev_ssize_t n = evbuffer_copyout(b, head, sizeof head - 1);
    if (n < 12)
        return -1;
    head[n] = 0;
    if (strncmp(head, "HTTP/1.1 ", 9) != 0 || head[9] < '1' || head[9] > '5')
        return -1;
    return atoi(head + 9);
}

static void run_request(const char *req, size_t len)
{
    struct client c = {.req = req, .len = len, .reply = evbuffer_new()};
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    strcpy(sa.sun_path, sock_path);
    c.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.fd < 0 || connect(c.fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        fprintf(stderr, "fuzz_handlers: connect %s: %s\n", sock_path, strerror(errno));
        abort();
    }
    c.wr = event_new(A.base, c.fd, EV_WRITE | EV_PERSIST, on_client_write, &c);
    c.rd = event_new(A.base, c.fd, EV_READ | EV_PERSIST, on_client_read, &c);
    c.timer = evtimer_new(A.base, on_client_timeout, &c);
    struct timeval tv = {REPLY_TIMEOUT_S, 0};
    event_add(c.wr, NULL);
    event_add(c.rd, NULL);
    event_add(c.timer, &tv);
    while (!c.done)
        event_base_loop(A.base, EVLOOP_ONCE);
    event_free(c.wr);
    event_free(c.rd);
    event_free(c.timer);
    close(c.fd);
    int status = reply_status(c.reply);
    if (status < 0 || (status >= 500 && status != 501)) { /* 501: evhttp, for a method it does not know */
        size_t rn = evbuffer_get_length(c.reply);
        fprintf(stderr, "fuzz_handlers: reply %d to:\n%.*s\n--- reply:\n%.*s\n", status, (int)len, req,
                (int)(rn > 2000 ? 2000 : rn), (const char *)evbuffer_pullup(c.reply, -1));
        abort();
    }
    if (getenv("FUZZ_HANDLERS_SHOW")) { /* what a seed gets: its request and the reply's start */
        size_t rn = evbuffer_get_length(c.reply);
        fprintf(stderr, "%.*s--- %d:\n%.*s\n", (int)len, req, status, (int)(rn > 600 ? 600 : rn),
                (const char *)evbuffer_pullup(c.reply, -1));
    }
    evbuffer_free(c.reply);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    if (!A.base)
        setup();
    int want = 0;
    if (size && data[0] < ' ') { /* the setup byte (see the top) */
        want = data[0] & (MODE_VIEW | MODE_BEYOND_LOOPBACK);
        data++;
        size--;
    }
    if (want != mode) {
        mode = want;
        A.readonly = (mode & MODE_VIEW) != 0;
        A.action = A.readonly ? ACTION_VIEW : ACTION_CREATE;
        api_free_state(&A);
        load_state();
    }
    struct strbuf req;
    sb_init(&req);
    int get = 0;
    if (build_request((const char *)data, size, &req, &get) == 0) {
        run_request(req.buf, req.len);
        /* let the api finish what the reply left (closing the connection) */
        event_base_loop(A.base, EVLOOP_NONBLOCK);
        if (!get || A.stopping || sqlite3_total_changes64(A.db->h) != changes_at_rest)
            restore();
    }
    sb_free(&req);
    return 0;
}

/* trialchan.h: NNI v3's HTTP trial command channel (spec §5.4), its one implementation
 * (common/trialchan.c), served by the api for cluster trials (api/chan_http.c reads the
 * sockets in libevent's loop, api/channel.c stores metrics in the database) and by a
 * local trial's group leader (supervise/chanserve.c, poll(), metrics into the trial's
 * .nni/metrics). Those two are adapters; the protocol is here:
 *
 *   - a connection's requests, one at a time: heads of at most TC_MAX_HEAD bytes and
 *     bodies of at most TC_MAX_BODY (common/http1.c parses them), a body taken from the
 *     server's budget before it is read (tc_ops.reserve), 100 Continue, keep-alive, no
 *     more than a head read ahead of the request being served, a request deadline from
 *     its first byte (tc_overdue), idle connections (tc_idle), which connection goes
 *     first when there are too many (tc_goes_before, tc_evict), the replies;
 *   - PUT's commands: 415 without a JSON content type, 400 for a body that is not a
 *     command, request_parameter, metric, other types (logged, 200) (tc_command), and
 *     a metric record's check (tc_metric_check);
 *   - GET's long poll: commands queued per trial (TC_MAX_QUEUED, the oldest dropped), one
 *     poll at a time (a newer one ends the older with 408), 408 after TC_POLL_MS, 410
 *     once the channel closes (struct tc_queue).
 *
 * libc only (trialq-supervise is static and links no cJSON or libevent); the input is
 * untrusted bytes. tests/chan/cases.txt holds the conformance cases every server of the
 * channel answers alike (tests/unit/test_common_trialchan.c runs them against this
 * module, tests/chan/conformance.py against the api, a leader and the Python relay of
 * cluster trials, sdk/chanrelay/trialq_chanrelay.py). */
#ifndef TRIALQ_TRIALCHAN_H
#define TRIALQ_TRIALCHAN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define TC_MAX_HEAD (8 << 10)  /* request line + headers */
#define TC_MAX_BODY (4 << 20)  /* one command (a metric record is under 1 MB) */
#define TC_MAX_RECORD 1000000  /* a metric record: NNI's 6-digit length field */
#define TC_POLL_MS 1000        /* a GET waits this long for a command */
#define TC_IDLE_MS 120000      /* a keep-alive connection with nothing pending, nothing read */
#define TC_MAX_QUEUED 16       /* commands waiting for a GET, per trial */

struct tc_conn;
struct http1_head;

/* What a server gives the connection code. */
struct tc_ops {
    /* A body of n bytes is about to be read: 0, or -1 with its 503 message in msg. */
    int (*reserve)(struct tc_conn *c, int64_t n, char *msg, size_t size);
    void (*release)(struct tc_conn *c, int64_t n);
    /* A head is in, its body not yet: 0 to read the body, or the status that refuses the
     * request from its head, with why in msg (the connection then closes). NULL: read. */
    int (*head)(struct tc_conn *c, const struct http1_head *h, char *msg, size_t size);
    /* A complete request: answered with tc_reply/tc_error, now or later. */
    void (*request)(struct tc_conn *c, const struct http1_head *h, const char *body);
    /* Output is left over: tc_flush once the socket is writable. */
    void (*want_write)(struct tc_conn *c);
    /* A reply was written (may be NULL). */
    void (*replied)(struct tc_conn *c);
    /* A send failed: the peer is gone (may be NULL). */
    void (*gone)(struct tc_conn *c);
};

/* One client connection (embedded in the server's own). */
struct tc_conn {
    const struct tc_ops *ops;
    int fd;
    char *in;
    size_t in_len, in_cap;
    size_t scanned;       /* bytes of in already searched for the end of the head */
    size_t want;          /* the most bytes read ahead: the request being read and a head
                           * more; 0: a head (TC_MAX_HEAD + 1) */
    char *out;
    size_t out_len, out_off;
    int pending;          /* a request waits for its reply: no further one is served */
    int close_after;      /* close once the reply is out */
    int peer_gone;        /* EOF or a failed send: nothing more is written */
    int continued;        /* 100 Continue sent for the request being read */
    int64_t reserved;     /* the budget held by the body being read */
    int64_t req_start_ms; /* the first byte of the request being read; 0: none */
    int64_t last_ms;      /* the last byte read or reply written */
};

void tc_conn_init(struct tc_conn *c, const struct tc_ops *ops, int fd);
/* Gives back its budget and frees its buffers (the socket is the caller's). */
void tc_conn_release(struct tc_conn *c);
/* Reads what the socket has, up to what the request being read needs and a head more:
 * 0, -1 at EOF, -2 on an error. */
int tc_read(struct tc_conn *c);
/* Whether the input holds all that may be read ahead (stop polling for input). */
int tc_input_full(const struct tc_conn *c);
int tc_out_empty(const struct tc_conn *c);
/* Writes what output is left: 1 when all is out. */
int tc_flush(struct tc_conn *c);
/* Serves the requests waiting in the input, one at a time (tc_ops.request). */
void tc_serve(struct tc_conn *c);
/* The reply to the pending request: code, and body (JSON, or "" or NULL for none). */
void tc_reply(struct tc_conn *c, int code, const char *body);
/* A 4xx/5xx with {"error": message}. */
void tc_error(struct tc_conn *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void tc_verror(struct tc_conn *c, int code, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
/* The peer is gone (EOF or an error): nothing more is written (tc_ops.gone). */
void tc_gone(struct tc_conn *c);
/* Whether the client is still there to read a reply (a poll it gave up on is not). */
int tc_alive(struct tc_conn *c);

/* Whether c waits on its client (nothing pending, no reply going out): it may be
 * evicted, and its deadline runs. */
int tc_waits_on_client(const struct tc_conn *c);
/* Which of two such connections to close first: a partial request before an idle
 * connection, the older of two. */
int tc_goes_before(const struct tc_conn *x, const struct tc_conn *y);
/* Closes c for a newcomer: a partial request gets 503 with why, an idle connection
 * just closes (close_after). */
void tc_evict(struct tc_conn *c, const char *why);
/* The request being read passed timeout_ms from its first byte: 408, closing; 1 then. */
int tc_overdue(struct tc_conn *c, int64_t now, int64_t timeout_ms);
/* Idle past TC_IDLE_MS with nothing read: to be closed. */
int tc_idle(const struct tc_conn *c, int64_t now);
/* Whether a 405 is answered (a method other than GET and PUT; the connection closes). */
int tc_method_refused(struct tc_conn *c, const struct http1_head *h);
/* The request's path: its target up to a '?' (length in *len). */
const char *tc_path(const struct http1_head *h, size_t *len);

/* ---- commands ---- */

enum tc_cmd_kind { TC_CMD_REFUSED, TC_CMD_PARAMETER, TC_CMD_METRIC, TC_CMD_OTHER };

/* A PUT's command: what it is, or why it is refused (code and msg). */
struct tc_cmd {
    enum tc_cmd_kind kind;
    int code;
    char msg[160];
    char *metric;         /* TC_CMD_METRIC: the metric record (decoded JSON string) */
    size_t metric_len;
};

/* Parses a PUT's body for trial_id (json_body: its Content-Type is JSON). An unknown
 * type is logged (who: the program, "" for the api) and is TC_CMD_OTHER, answered 200. */
void tc_command(const char *body, size_t len, int json_body, const char *trial_id, const char *who,
                struct tc_cmd *cmd);
void tc_cmd_free(struct tc_cmd *cmd);
/* A metric record m[0..n) sent on trial_id's channel: 200, or 400/403 with why in msg
 * (a JSON object of type PERIODICAL or FINAL with a value, naming no other trial). */
int tc_metric_check(const char *m, size_t n, const char *trial_id, char *msg, size_t size);
/* The command that answers request_parameter: {"type":"parameter","parameter":record}. */
char *tc_parameter_command(const char *record);

/* ---- the long poll ---- */

/* One trial's commands waiting for a GET, and the GET waiting for a command. */
struct tc_queue {
    char *cmd[TC_MAX_QUEUED];
    int n;
    struct tc_conn *waiting;
    int64_t deadline_ms; /* of the waiting GET's 408 */
};

/* Queues cmd (taken) and answers the waiting GET; 1 when the oldest command was dropped
 * to make room (a trial that asks and never reads keeps the newest). */
int tc_queue_push(struct tc_queue *q, char *cmd);
/* A GET on c: the older poll ends with 408; 410 when nothing is queued and the channel
 * is closing; a queued command at once; else c waits (1 then: its deadline is set). */
int tc_queue_poll(struct tc_queue *q, struct tc_conn *c, int closing);
/* The waiting GET, if its deadline passed: 408, or 410 when closing. */
void tc_queue_expire(struct tc_queue *q, int64_t now, int closing);
/* c goes away: it no longer waits. */
void tc_queue_forget(struct tc_queue *q, const struct tc_conn *c);
/* Answers the waiting GET with 410 and frees the queued commands. */
void tc_queue_close(struct tc_queue *q);

#endif

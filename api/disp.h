/* disp.h: inside the dispatcher (api/dispatcher.h is its face to the rest of the api).
 * One concern per file, all on one struct dispatcher, which the api holds (a->disp)
 * and every callback gets as its argument:
 *   dispatcher.c  set-up, the tuner interface, shutdown
 *   disp_proc.c   the process: launch (command, environment, fork/exec), its output,
 *                 supervision (deadlines, liveness), failure, termination
 *   disp_chan.c   the channel: sending a command (WebSocket or pipe), the pipe reader
 *   disp_ws.c     the WebSocket upgrade on the api's port and the frame reader
 *   disp_proto.c  NNI's commands: what is fed (IN, GE, ME, EN, FD, AD, SS, TE) from the
 *                 database, what is answered (ID, TR, NO, KI, ER, ...), and the pure
 *                 formats of both (unit-tested: tests/unit/test_api_dispatcher.c) */
#ifndef TRIALQ_DISP_H
#define TRIALQ_DISP_H

#include <stdint.h>
#include <sys/types.h>

#include <event2/bufferevent.h>
#include <event2/http.h>

#include "api/api.h"
#include "api/websocket.h"
#include "common/json.h"

#define DISP_MAX_MESSAGE (64u << 20)
#define DISP_WAIT_TR "trial parameters (TR) after GE"

/* What the api sends the dispatcher, by NNI's names (its CommandType). */
#define OUT_INITIALIZE "IN"                  /* the search space */
#define OUT_REQUEST_TRIAL_JOBS "GE"          /* how many */
#define OUT_REPORT_METRIC_DATA "ME"          /* a metric record */
#define OUT_UPDATE_SEARCH_SPACE "SS"
#define OUT_IMPORT_DATA "FD"                 /* finished results and imports */
#define OUT_ADD_CUSTOMIZED_TRIAL_JOB "AD"    /* trials still running, at a resume */
#define OUT_TRIAL_END "EN"
#define OUT_TERMINATE "TE"

enum dstate { D_NEW, D_CONNECTING, D_INIT, D_READY, D_FAILED, D_CLOSED };

struct disp_tr {            /* a TR not yet taken by the scheduler */
    cJSON *params;
    char *disp_id;          /* the dispatcher's parameter_id, JSON text */
    char *payload;          /* the TR content, as NNI hands it back in EN */
};

struct disp_pmap {          /* our trial parameter_id -> the dispatcher's */
    int64_t ours;
    char *disp_id;
    char *payload;
};

struct dispatcher {
    struct api *a;
    int refs;               /* tuner states pointing here (a search-space swap makes two) */
    enum dstate state;
    int use_ws;
    int custom_tuner, custom_assessor;
    /* the process (disp_proc.c) */
    pid_t pid;
    uint64_t pid_start;
    int64_t proc_row;
    struct event *timer;
    int64_t deadline_ms;    /* 0 = nothing expected */
    const char *waiting_for;
    int waiting_trials;     /* the deadline is for TR after GE */
    int64_t answer_timeout_ms;
    int64_t gone_since_ms;  /* channel closed or process gone: fail after a grace */
    int reaped, wait_status; /* children_reap collected its exit status */
    struct bufferevent *err; /* stdout + stderr of the process */
    struct strbuf tail;
    struct strbuf line;     /* its output's line not yet ended */
    /* the pipe channel (disp_chan.c) */
    struct bufferevent *to, *from;
    /* the WebSocket channel (disp_ws.c) */
    struct evhttp_connection *ws_conn;
    struct bufferevent *ws;
    struct ws_reader ws_in;
    int64_t last_ping_ms;
    /* the protocol (disp_proto.c) */
    int requested;          /* trials asked for with GE, not answered yet */
    int no_more;            /* NO received */
    struct disp_tr *queue;
    int nqueue, capqueue;
    struct disp_pmap *map;
    int nmap, capmap;
    char **ended;           /* trials whose EN was sent */
    int nended, capended;
    int64_t metric_cursor, change_cursor, import_cursor;
    char *sent_space;
    int kick_pending;
};

/* ---- disp_proc.c ---- */
/* Starts the timer and the process (once, when the event loop and the port exist). */
void disp_start(struct dispatcher *d);
/* Fails the experiment (error + ERROR, unless it is stopping), closes the channel and
 * ends the process. Once. */
void disp_fail(struct dispatcher *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 when the process has ended (reaped here, or by children_reap). */
int disp_process_gone(struct dispatcher *d);
/* SIGTERM to its process group, SIGKILL after grace_ms; its process row ended. */
void disp_terminate(struct dispatcher *d, int grace_ms);
/* What the process printed and is still buffered, into the log and the tail. */
void disp_drain_output(struct dispatcher *d);
/* The last lines the process printed (its traceback), for an error message. */
const char *disp_tail(const struct dispatcher *d);

/* ---- disp_chan.c ---- */
void disp_send(struct dispatcher *d, const char *type, const char *content);
/* The pipe channel over fds to_fd (its fd 3) and from_fd (its fd 4), taken over. */
void disp_pipes_open(struct dispatcher *d, int to_fd, int from_fd);
/* Either channel reached EOF or an error: the process is going. */
void disp_channel_event(struct bufferevent *bev, short what, void *arg);
/* Writes what is buffered now (the event loop is not running any more). */
void disp_channel_flush(struct dispatcher *d, int64_t deadline_ms);
void disp_channel_close(struct dispatcher *d);

/* ---- disp_ws.c ---- */
void disp_ws_send(struct dispatcher *d, int opcode, const void *payload, size_t n);

/* ---- disp_proto.c ---- */
/* The channel is open: IN with the search space, then ID is awaited. */
void disp_hello(struct dispatcher *d);
/* One command from the process. */
void disp_command(struct dispatcher *d, const char *type, const char *content);
/* New rows since the cursors: SS, FD, ME, EN. */
void disp_feed(struct dispatcher *d);
/* An answer of this kind is awaited within timeout_ms. */
void disp_expect(struct dispatcher *d, const char *what, int64_t timeout_ms);
/* The dispatcher's own parameter record for our tuner index, or NULL. */
const struct disp_pmap *disp_map_find(const struct dispatcher *d, int64_t ours);
void disp_map_add(struct dispatcher *d, int64_t ours, const char *disp_id, const char *payload);

/* pure: the formats (no state, no I/O) */
/* NNI's answers: Initialized (ID), NewTrialJob (TR), NoMoreTrialJobs (NO), KillTrialJob
 * (KI), Error (ER), SendTrialJobParameter (SP), and the channel's own _bye_ and _nop_. */
enum disp_cmd {
    CMD_UNKNOWN, CMD_INITIALIZED, CMD_TRIAL, CMD_NO_MORE, CMD_KILL, CMD_ERROR, CMD_SEND_PARAMETER, CMD_BYE, CMD_NOP
};
/* NNI's two letters (or _bye_, _nop_) of a command from the dispatcher. */
enum disp_cmd disp_cmd_of(const char *type);
/* A decimal integer as NNI's JSON writes parameter ids that are numbers (a JSON
 * integer of at most 15 digits: exact in a double). */
int disp_is_int_text(const char *s);
/* Appends id as the wire's parameter_id: a number when it is one, else a JSON string,
 * null when NULL or empty. */
void disp_put_id(struct strbuf *sb, const char *id);
/* One command as the channel carries it: a WebSocket text frame of
 * {"type","content"}, or NNI's pipe frame. */
void disp_encode(struct strbuf *sb, int use_ws, const char *type, const char *content);
/* A WebSocket message into its type and content (new strings; _bye_ carries its
 * reason). -1 with e set when it is not such JSON. */
int disp_ws_decode(const char *text, size_t n, char **type, char **content, struct errbuf *e);
/* ME's content for a metric; final: FINAL, else PERIODICAL. */
void disp_metric_json(struct strbuf *sb, const char *trial_id, const char *parameter_id, int final, int64_t sequence,
                      const char *value);
/* EN's content. */
void disp_end_json(struct strbuf *sb, const char *trial_id, const char *status, const char *payload);
/* A trial still waiting or running as a parameter record of source "resumed" (AD):
 * *wire_id the id the dispatcher knows it by (its label, else the index), JSON. */
char *disp_resumed_record(int64_t index, const char *label, const char *parameters, char **wire_id);
/* A TR's record: its parameters (new) and parameter_id (JSON text, new). -1 with e set
 * when it is not a parameter record. */
int disp_parse_tr(const char *content, cJSON **params, char **disp_id, struct errbuf *e);
/* The label a trial of tuner index gets from the dispatcher's parameter_id (JSON
 * text): its string, or its JSON when it is not the index; NULL for the index itself. */
char *disp_label_of(const char *disp_id, int64_t index);

#endif

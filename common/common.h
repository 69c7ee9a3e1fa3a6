/* common.h: small helpers shared by every module (allocation, errors, logging,
 * time, files, processes, ids). Includes nothing of ours. */
#ifndef TRIALQ_COMMON_H
#define TRIALQ_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* ---- allocation: abort on out-of-memory so call sites stay simple ---- */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- errors: functions return 0 or -1 and fill an errbuf the caller owns ---- */
struct errbuf {
    char msg[1024];
};
/* Sets e->msg (when e is not NULL) and returns -1. */
int errf(struct errbuf *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefixes the message already in e with "prefix: ". Returns -1. */
int errprefix(struct errbuf *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- logging: "[YYYY-MM-DD HH:MM:SS] LEVEL (module) message" on stderr ---- */
enum log_level { LOG_TRACE, LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };
void log_set_level(enum log_level lvl);
int log_level_parse(const char *s, enum log_level *out);
void log_set_module(const char *module); /* role name shown in every line */
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
/* One line per distinct message per minute, then "(N times in the last minute)". */
void log_limited(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Warnings that outside input can repeat at will (a trial's malformed metric records, a
 * peer's unexpected commands, a tuner's bad answers): per key ("trial X: metrics file"),
 * the first of a minute is logged as "KEY: message"; the others of that minute are only
 * counted, and the count is logged as "KEY: N more WHAT in the last minute" with the
 * first one after the minute, by log_input_flush, or when the key's slot is taken by
 * another key. So a flood costs two lines a minute per key, whatever its size. The
 * message is formatted only when it is logged. Returns 1 when the line was logged. */
int log_input(enum log_level lvl, const char *key, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Logs the pending counts of the keys whose minute is over (a periodic tick calls it),
 * or of every key when all is set (at exit). */
void log_input_flush(int all);

/* ---- resource faults (common/fault.c): what this process cannot write, for users ---- */
#define FAULT_MSG_MAX 512
#define FAULT_FILE_SIZE 4096
/* Keeps this process's faults also in DIR/ROLE.PID, created now at its full size. */
int fault_publish_to(const char *dir, const char *role);
/* Sets (or repeats, rate-limited in the log) the fault of a key: "database", a path. */
void fault_set(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The key's fault is over (logged as resolved). */
void fault_clear(const char *key);
int fault_active(void);
int fault_has(const char *key);
/* Calls fn for each current fault of this process / of the live processes publishing in
 * DIR other than skip; returns how many. */
int fault_each(void (*fn)(const char *msg, void *arg), void *arg);
int fault_each_published(const char *dir, pid_t skip, void (*fn)(const char *msg, void *arg), void *arg);
/* The fn for those two that appends msg to a cJSON array, once. */
void fault_json_add(const char *msg, void *array);
/* ENOSPC, EDQUOT, EIO, EROFS: a fault of the machine, not of the trial. */
int fault_is_resource(int err);

/* ---- time ---- */
int64_t now_ms(void);       /* wall clock, epoch milliseconds */
int64_t mono_ms(void);      /* monotonic milliseconds */
int64_t mono_us(void);      /* monotonic microseconds */
void format_time_ms(int64_t ms, const char *fmt, char *out, size_t outlen); /* local time */
/* "1h", "30m", "10s", "2d", "0.5h" (any case), or a plain number of seconds -> seconds
 * (ceil). NNI's parse_time; the number is digits with at most one '.': no sign, space,
 * exponent or hex. Returns -1 on a bad string or a value that is not > 0. */
int parse_duration(const char *s, int64_t *seconds);

/* ---- strings ---- */
struct strbuf {
    char *buf;
    size_t len, cap;
};
void sb_init(struct strbuf *sb);
void sb_free(struct strbuf *sb);
void sb_add(struct strbuf *sb, const char *s, size_t n);
void sb_puts(struct strbuf *sb, const char *s);
void sb_printf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *sb_detach(struct strbuf *sb); /* caller frees; sb is reset */
int str_starts(const char *s, const char *prefix);
int str_ends(const char *s, const char *suffix);
/* Length of the valid UTF-8 character at s (1..4), or 0 when the bytes there are not one
 * (overlong forms, surrogates and code points beyond U+10FFFF are not). Reads at most
 * avail bytes, and a byte only while those before it fit: on a NUL-terminated string
 * avail may be SIZE_MAX (the NUL is no continuation byte). */
int utf8_len(const unsigned char *s, size_t avail);

/* ---- shell words and base64 (common/shell.c, common/base64.c) ---- */
/* Appends s as one POSIX shell word: in single quotes, each ' written as '\''. Every
 * byte but NUL passes unchanged (newlines, $, `, \, "); "" becomes ''. */
void sh_quote(struct strbuf *sb, const char *s);
char *sh_quoted(const char *s); /* the same, as a new string; caller frees */
/* Standard base64 with padding. b64_encode_to writes B64_ENCODED_SIZE(len) bytes at
 * most (NUL included) and returns the length; b64_encode allocates (caller frees). */
#define B64_ENCODED_SIZE(len) (((len) + 2) / 3 * 4 + 1)
size_t b64_encode_to(const void *data, size_t len, char *out);
char *b64_encode(const void *data, size_t len);
/* Decodes s, skipping whitespace; NULL when s is not base64. The result (*len bytes)
 * is NUL-terminated as well. Caller frees. */
char *b64_decode(const char *s, size_t *len);

/* ---- text from a trial (or a tuner, a cluster) in a log line or a message ---- */
/* Untrusted text must not forge log lines or drive the reader's terminal: a snippet of
 * it is one line of plain text. s[0..n) is the text as framed (a NUL in it is shown, not
 * an end); at most max bytes of it are shown, then "..." when there was more. Valid
 * UTF-8 stays as it is (never cut inside a character); backslash is \\, newline,
 * return and tab are \n \r \t, other control bytes, DEL and bytes that are not UTF-8
 * are \xNN, and the C1 controls and line separators (U+0080..U+009F, U+2028, U+2029)
 * are \uNNNN. */
void sb_add_snippet(struct strbuf *sb, const char *s, size_t n, size_t max);
#define SNIPPET_MAX 200                      /* input bytes a log line shows */
#define SNIPPET_SIZE (4 * SNIPPET_MAX + 4)   /* its worst case: \xNN each, "...", NUL */
/* sb_add_snippet(s, n, SNIPPET_MAX) into out (SNIPPET_SIZE bytes), for a format's %s.
 * Returns out. */
const char *snippet(char out[SNIPPET_SIZE], const char *s, size_t n);

/* ---- files ---- */
int mkdir_p(const char *path, mode_t mode);
/* Reads a whole file (NUL-terminated). NULL on error (errno set). */
char *read_file(const char *path, size_t *len_out);
/* write tmp, fsync, rename, fsync dir: the file has the old or the new content. */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);
/* The same without the fsyncs: atomic against process crashes (kill -9), not power loss. */
int write_file_replace(const char *path, const void *data, size_t len, mode_t mode);
int rm_rf(const char *path);
char *path_join(const char *a, const char *b); /* caller frees */
char *path_abs(const char *base_dir, const char *path); /* ~ expansion, relative to base */
char *home_dir(void); /* $HOME or the passwd entry; caller frees */

/* ---- processes ---- */
/* Start time of pid in clock ticks since boot (field 22 of /proc/pid/stat); 0 if gone. */
uint64_t proc_start_time(pid_t pid);
/* True when pid runs (not a zombie) and, if start_time != 0, started then. */
int proc_alive(pid_t pid, uint64_t start_time);
/* SIGTERM, wait up to grace_ms, SIGKILL; waits for it to disappear. pid>0 a process,
 * pid<0 a process group. Returns 0 when gone. */
int proc_terminate(pid_t pid, uint64_t start_time, int grace_ms);
/* True when a live (not zombie) process is in process group pgid, of session sid (0:
 * any), started at or after since (clock ticks since boot): a job's group told apart
 * from a later group that reused the number. Scans /proc. */
int proc_group_alive(pid_t pgid, pid_t sid, uint64_t since);
void close_fds_from(int lowfd); /* in a child before exec */
/* Raises the soft limit on open files to the hard one (the api: thousands of
 * connections); returns the limit now in force. fd_limit_restore, in a child before
 * exec, gives it back the soft limit the process started with. */
long fd_limit_raise(void);
void fd_limit_restore(void);
/* The first executable file `name` on PATH (/usr/local/bin:/usr/bin:/bin when unset),
 * or NULL. Caller frees. */
char *find_on_path(const char *name);
/* Runs argv (PATH searched; stdin /dev/null, its own process group), capturing stdout
 * and stderr (up to 1 MiB each; out/err may be NULL, else the caller frees them).
 * timeout_ms > 0: its group is killed after that long. Returns the exit status (128 +
 * the signal when killed by one), -1 when it could not be run or waited for, -2 on a
 * timeout. */
int run_capture(char *const argv[], int timeout_ms, char **out, char **err);
/* In a child right after fork: its own process group, SIGTERM when parent (the forker's
 * pid) dies however it dies (PR_SET_PDEATHSIG), SIGPIPE and SIGHUP default, no signal
 * blocked. -1 when parent is already gone (the child should _exit). */
int child_of(pid_t parent);
const char *host_name(void);
/* setproctitle: main() hands over its argv once; a process may then rename itself as
 * ps and pgrep -f show it (a forked supervisor is not "trialq worker ..."). */
void proc_title_init(int argc, char **argv);
void proc_title_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- ids and randomness ---- */
void random_bytes(void *buf, size_t n);
void gen_experiment_id(char out[9]); /* 8 chars of [a-z0-9] without repetition */
void gen_trial_id(char out[6]);      /* 5 chars, letter first, then [a-zA-Z0-9] */
/* True when s has the form the generators above give (any repetition allowed): what an
 * id read from outside (an experiment pack) must be before it names a file or a job. */
int is_experiment_id(const char *s);
int is_trial_id(const char *s);
void gen_token(char *out, size_t hexlen); /* hex secret, NUL-terminated */

/* ---- the trialq home: $NNI_HOME or ~/nni-experiments ---- */
char *trialq_home(const char *override); /* caller frees */
char *trialq_db_path(const char *home);  /* <home>/trialq.db */
/* The path of this executable (/proc/self/exe: links resolved). Caller frees. */
char *self_exe_path(void);
/* The folder of trialq's data NAME (webui, python, launcher): <the folder of this
 * executable>/../share/trialq/NAME when it holds PROBE (trialq installed under any
 * prefix: /usr/bin, /usr/local/bin, ~/.local/bin), else BUILD_TREE, the source tree's
 * folder of it (a binary of a build tree), given as TRIALQ_BUILD_TREE("/webui"). A
 * package's build (TRIALQ_INSTALLED_ONLY) knows no source tree: the installed folder
 * always. Caller frees. */
char *trialq_data_dir(const char *name, const char *probe, const char *build_tree);
#ifdef TRIALQ_INSTALLED_ONLY
#define TRIALQ_BUILD_TREE(rel) NULL
#else
#define TRIALQ_BUILD_TREE(rel) (TRIALQ_SOURCE_DIR rel)
#endif

#endif

/* faultinj.h: the decision shared by the two fault-injection libraries of the tests
 * (io.c: file writes through libc; vfs.c: SQLite's file operations). Each library is
 * loaded with LD_PRELOAD and configured by environment variables that start with its
 * own prefix (TQFI_IO_ or TQFI_DB_), read once per process:
 *
 *   PROCS    comma list of process kinds hit: api, worker, supervise (the supervisor and
 *            the trial's group leader it forks), nnictl, or "any" (default api,worker,supervise)
 *   OPS      comma list of operations hit (default: all the library wraps)
 *   PATHS    colon list of path prefixes hit (default: every path)
 *   SKIP     colon list of path prefixes never hit
 *   ERRNOS   comma list of ENOSPC, EIO, EROFS, EDQUOT: each fault takes one at random
 *            (default ENOSPC)
 *   NTH      fail the Nth matching operation of each process (1-based), once; a comma
 *            list (up to 256) fails each of those
 *   PROB     fail each matching operation with this probability (0..1)
 *   BURST    a fault that fires fails this many matching operations in a row (default 1)
 *   SEED     seeds the choice; each process mixes in its pid (default 1)
 *   CONTROL  a path: faults fire only while this file exists (checked every 50 ms)
 *   LOG      a file that gets one line per injected fault: "<kind> <pid> <op> <errno> <path>"
 *   COUNT    a file that gets, from each process of a kind hit that calls exit(), one line
 *            "<kind> <pid> <n>": how many matching operations it made (counted while
 *            CONTROL allowed faults). A sweep over NTH learns from it where N ends.
 *
 * Nothing is injected when neither NTH nor PROB is set (COUNT alone only counts). */
#ifndef TQFI_FAULTINJ_H
#define TQFI_FAULTINJ_H

/* Both libraries carry a copy of faultinj.c; hidden, so that neither interposes the other's. */
#define FI_HIDDEN __attribute__((visibility("hidden")))

struct fi_config;

/* The configuration of the library with this prefix (parsed on first use). */
FI_HIDDEN struct fi_config *fi_config(const char *prefix);
/* Whether this process may see faults of C at all (cheap: before looking up a path). */
FI_HIDDEN int fi_active(const struct fi_config *c);
/* 0: let OP on PATH run; otherwise the errno to fail it with (the fault is logged with
 * raw system calls, never through the wrapped functions). PATH may be NULL when unknown
 * (then only a config without PATHS hits it). */
FI_HIDDEN int fi_decide(struct fi_config *c, const char *op, const char *path);

#endif

/* vfs.c: LD_PRELOAD library for the tests whose constructor registers, as SQLite's
 * default, a VFS that wraps the real default one and fails its file operations
 * (faultinj.h, prefix TQFI_DB_). trialq links libsqlite3 dynamically and opens every
 * database with the default VFS, so each of its connections goes through this one.
 * Operations, as OPS names them: write (xWrite), sync (xSync), truncate (xTruncate).
 * The path is the file's (the database, its -wal or -journal). A fault is what the
 * unix VFS returns for that errno: SQLITE_FULL for ENOSPC and EDQUOT, else
 * SQLITE_IOERR_WRITE / _FSYNC / _TRUNCATE. */
#include "faultinj.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

struct fi_file {
    sqlite3_file base;
    sqlite3_file *real; /* follows this struct in the same allocation */
    char path[512];
};

static sqlite3_vfs *g_real;
static sqlite3_vfs g_vfs;
static struct fi_config *g_cfg;

static int fault_rc(const struct fi_file *f, const char *op, int ioerr)
{
    int err = fi_decide(g_cfg, op, f->path[0] ? f->path : NULL);
    if (!err)
        return SQLITE_OK;
    return err == ENOSPC || err == EDQUOT ? SQLITE_FULL : ioerr;
}

#define REALF(f) (((struct fi_file *)(f))->real)
#define RM(f) (REALF(f)->pMethods)

static int fi_close(sqlite3_file *f)
{
    int rc = RM(f)->xClose(REALF(f));
    f->pMethods = NULL;
    return rc;
}
static int fi_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
    return RM(f)->xRead(REALF(f), buf, n, off);
}
static int fi_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
    int rc = fault_rc((struct fi_file *)f, "write", SQLITE_IOERR_WRITE);
    return rc ? rc : RM(f)->xWrite(REALF(f), buf, n, off);
}
static int fi_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    int rc = fault_rc((struct fi_file *)f, "truncate", SQLITE_IOERR_TRUNCATE);
    return rc ? rc : RM(f)->xTruncate(REALF(f), size);
}
static int fi_sync(sqlite3_file *f, int flags)
{
    int rc = fault_rc((struct fi_file *)f, "sync", SQLITE_IOERR_FSYNC);
    return rc ? rc : RM(f)->xSync(REALF(f), flags);
}
static int fi_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return RM(f)->xFileSize(REALF(f), size);
}
static int fi_lock(sqlite3_file *f, int lock)
{
    return RM(f)->xLock(REALF(f), lock);
}
static int fi_unlock(sqlite3_file *f, int lock)
{
    return RM(f)->xUnlock(REALF(f), lock);
}
static int fi_check_reserved(sqlite3_file *f, int *out)
{
    return RM(f)->xCheckReservedLock(REALF(f), out);
}
static int fi_file_control(sqlite3_file *f, int op, void *arg)
{
    return RM(f)->xFileControl(REALF(f), op, arg);
}
static int fi_sector_size(sqlite3_file *f)
{
    return RM(f)->xSectorSize(REALF(f));
}
static int fi_device_characteristics(sqlite3_file *f)
{
    return RM(f)->xDeviceCharacteristics(REALF(f));
}
static int fi_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **out)
{
    return RM(f)->xShmMap(REALF(f), page, size, extend, out);
}
static int fi_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    return RM(f)->xShmLock(REALF(f), offset, n, flags);
}
static void fi_shm_barrier(sqlite3_file *f)
{
    RM(f)->xShmBarrier(REALF(f));
}
static int fi_shm_unmap(sqlite3_file *f, int del)
{
    return RM(f)->xShmUnmap(REALF(f), del);
}
static int fi_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **out)
{
    return RM(f)->xFetch(REALF(f), off, n, out);
}
static int fi_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    return RM(f)->xUnfetch(REALF(f), off, p);
}

/* one table per version of the real file's methods (the unix VFS's are version 3) */
static const sqlite3_io_methods g_methods[4] = {
#define FI_METHODS(v) {v, fi_close, fi_read, fi_write, fi_truncate, fi_sync, fi_file_size, fi_lock, fi_unlock, \
    fi_check_reserved, fi_file_control, fi_sector_size, fi_device_characteristics, fi_shm_map, fi_shm_lock, \
    fi_shm_barrier, fi_shm_unmap, fi_fetch, fi_unfetch}
    FI_METHODS(1), FI_METHODS(1), FI_METHODS(2), FI_METHODS(3),
};

static int fi_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags)
{
    struct fi_file *f = (struct fi_file *)file;
    f->real = (sqlite3_file *)(f + 1);
    snprintf(f->path, sizeof f->path, "%s", name ? name : "");
    int rc = g_real->xOpen(g_real, name, f->real, flags, out_flags);
    int v = f->real->pMethods ? f->real->pMethods->iVersion : 0;
    f->base.pMethods = f->real->pMethods ? &g_methods[v < 1 ? 1 : v > 3 ? 3 : v] : NULL;
    return rc;
}

static int fi_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
    return g_real->xDelete(g_real, name, sync_dir);
}
static int fi_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
    return g_real->xAccess(g_real, name, flags, out);
}
static int fi_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    return g_real->xFullPathname(g_real, name, n, out);
}
static void *fi_dlopen(sqlite3_vfs *vfs, const char *name)
{
    return g_real->xDlOpen(g_real, name);
}
static void fi_dlerror(sqlite3_vfs *vfs, int n, char *out)
{
    g_real->xDlError(g_real, n, out);
}
static void (*fi_dlsym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
    return g_real->xDlSym(g_real, h, sym);
}
static void fi_dlclose(sqlite3_vfs *vfs, void *h)
{
    g_real->xDlClose(g_real, h);
}
static int fi_randomness(sqlite3_vfs *vfs, int n, char *out)
{
    return g_real->xRandomness(g_real, n, out);
}
static int fi_sleep(sqlite3_vfs *vfs, int us)
{
    return g_real->xSleep(g_real, us);
}
static int fi_current_time(sqlite3_vfs *vfs, double *out)
{
    return g_real->xCurrentTime(g_real, out);
}
static int fi_get_last_error(sqlite3_vfs *vfs, int n, char *out)
{
    return g_real->xGetLastError(g_real, n, out);
}
static int fi_current_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
    return g_real->xCurrentTimeInt64(g_real, out);
}
static int fi_set_syscall(sqlite3_vfs *vfs, const char *name, sqlite3_syscall_ptr p)
{
    return g_real->xSetSystemCall(g_real, name, p);
}
static sqlite3_syscall_ptr fi_get_syscall(sqlite3_vfs *vfs, const char *name)
{
    return g_real->xGetSystemCall(g_real, name);
}
static const char *fi_next_syscall(sqlite3_vfs *vfs, const char *name)
{
    return g_real->xNextSystemCall(g_real, name);
}

__attribute__((constructor)) static void fi_register(void)
{
    g_cfg = fi_config("TQFI_DB_");
    if (!fi_active(g_cfg)) /* nothing to inject in this process: leave SQLite as it is */
        return;
    g_real = sqlite3_vfs_find(NULL);
    if (!g_real || g_real->iVersion < 3)
        return;
    g_vfs = (sqlite3_vfs){
        .iVersion = 3,
        .szOsFile = (int)sizeof(struct fi_file) + g_real->szOsFile,
        .mxPathname = g_real->mxPathname,
        .zName = "trialq-faultinj",
        .xOpen = fi_open,
        .xDelete = fi_delete,
        .xAccess = fi_access,
        .xFullPathname = fi_full_pathname,
        .xDlOpen = fi_dlopen,
        .xDlError = fi_dlerror,
        .xDlSym = fi_dlsym,
        .xDlClose = fi_dlclose,
        .xRandomness = fi_randomness,
        .xSleep = fi_sleep,
        .xCurrentTime = fi_current_time,
        .xGetLastError = fi_get_last_error,
        .xCurrentTimeInt64 = fi_current_time64,
        .xSetSystemCall = fi_set_syscall,
        .xGetSystemCall = fi_get_syscall,
        .xNextSystemCall = fi_next_syscall,
    };
    sqlite3_vfs_register(&g_vfs, 1);
}

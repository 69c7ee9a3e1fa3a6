/* ssh.c: libssh2 connections for the remote platform. Blocking libssh2 calls with a
 * session timeout (libssh2_session_set_timeout), a non-blocking connect() bounded by
 * poll(): no call waits longer than its deadline on a dead host. */
#include "workers/ssh.h"

#include <errno.h>
#include <fcntl.h>
#include <libssh2.h>
#include <libssh2_sftp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

struct ssh_conn {
    int fd;
    LIBSSH2_SESSION *s;
    LIBSSH2_SFTP *sftp;
    char *password; /* for keyboard-interactive prompts */
    int op_timeout_ms;
};

static const char *sess_err(LIBSSH2_SESSION *s)
{
    char *msg = NULL;
    libssh2_session_last_error(s, &msg, NULL, 0);
    return msg && *msg ? msg : "unknown error";
}

static int tcp_connect(const struct ssh_target *t, struct errbuf *e)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    char port[16];
    snprintf(port, sizeof port, "%d", t->port);
    int rc = getaddrinfo(t->host, port, &hints, &res);
    if (rc != 0)
        return errf(e, "unreachable: cannot resolve %s: %s", t->host, gai_strerror(rc));
    int fd = -1, err = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        if (errno == EINPROGRESS) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int pr;
            do
                pr = poll(&p, 1, t->connect_timeout_ms);
            while (pr < 0 && errno == EINTR);
            socklen_t len = sizeof err;
            if (pr == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
                break;
            if (pr == 0)
                err = ETIMEDOUT;
        } else {
            err = errno;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        if (err == ETIMEDOUT)
            return errf(e, "unreachable: no answer from %s port %d within %d s", t->host, t->port,
                        t->connect_timeout_ms / 1000);
        return errf(e, "unreachable: cannot connect to %s port %d: %s", t->host, t->port, strerror(err));
    }
    /* libssh2 runs blocking on the socket; its session timeout bounds each call */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int knownhost_keybit(int hostkey_type)
{
    switch (hostkey_type) {
    case LIBSSH2_HOSTKEY_TYPE_RSA: return LIBSSH2_KNOWNHOST_KEY_SSHRSA;
    case LIBSSH2_HOSTKEY_TYPE_DSS: return LIBSSH2_KNOWNHOST_KEY_SSHDSS;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_256: return LIBSSH2_KNOWNHOST_KEY_ECDSA_256;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_384: return LIBSSH2_KNOWNHOST_KEY_ECDSA_384;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_521: return LIBSSH2_KNOWNHOST_KEY_ECDSA_521;
    case LIBSSH2_HOSTKEY_TYPE_ED25519: return LIBSSH2_KNOWNHOST_KEY_ED25519;
    default: return LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
    }
}

/* known_hosts names a host on port 22 by its name, on other ports as "[host]:port". */
static char *knownhost_name(const struct ssh_target *t)
{
    return t->port == 22 ? xstrdup(t->host) : xasprintf("[%s]:%d", t->host, t->port);
}

static int check_host_key(struct ssh_conn *c, const struct ssh_target *t, enum ssh_failure *why,
                          struct errbuf *e)
{
    size_t keylen = 0;
    int type = 0;
    const char *key = libssh2_session_hostkey(c->s, &keylen, &type);
    if (!key)
        return *why = SSH_UNREACHABLE, errf(e, "unreachable: no host key: %s", sess_err(c->s));
    LIBSSH2_KNOWNHOSTS *kh = libssh2_knownhost_init(c->s);
    if (!kh)
        return *why = SSH_UNREACHABLE, errf(e, "cannot check host keys: %s", sess_err(c->s));
    /* a missing file is an empty list */
    if (access(t->known_hosts, F_OK) == 0 &&
        libssh2_knownhost_readfile(kh, t->known_hosts, LIBSSH2_KNOWNHOST_FILE_OPENSSH) < 0)
        log_warn("%s: some lines could not be read (%s)", t->known_hosts, sess_err(c->s));
    struct libssh2_knownhost *found = NULL;
    int bit = knownhost_keybit(type);
    int rc = libssh2_knownhost_checkp(kh, t->host, t->port, key, keylen,
                                      LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | bit, &found);
    char *name = knownhost_name(t);
    int ret = 0;
    if (rc == LIBSSH2_KNOWNHOST_CHECK_MATCH) {
        ret = 0;
    } else if (rc == LIBSSH2_KNOWNHOST_CHECK_MISMATCH) {
        *why = SSH_HOSTKEY_CHANGED;
        ret = errf(e, "HOST KEY CHANGED: the key of %s differs from the one in %s; refusing to connect "
                      "(if the host was reinstalled, remove its line with: ssh-keygen -f %s -R '%s')",
                   name, t->known_hosts, t->known_hosts, name);
    } else if (rc == LIBSSH2_KNOWNHOST_CHECK_NOTFOUND && !t->accept_new_host_key) {
        *why = SSH_HOSTKEY_UNKNOWN;
        ret = errf(e, "host key of %s is not in %s; add it (ssh-keyscan -p %d %s >> %s) or set "
                      "acceptNewHostKeys: true in trainingService",
                   name, t->known_hosts, t->port, t->host, t->known_hosts);
    } else if (rc == LIBSSH2_KNOWNHOST_CHECK_NOTFOUND) {
        /* record it: append one line, leaving the rest of the file as it is */
        struct libssh2_knownhost *added = NULL;
        char line[8192];
        size_t outlen = 0;
        const char comment[] = "added by trialq";
        if (libssh2_knownhost_addc(kh, name, NULL, key, keylen, comment, sizeof comment - 1,
                                   LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | bit, &added) < 0 ||
            libssh2_knownhost_writeline(kh, added, line, sizeof line, &outlen, LIBSSH2_KNOWNHOST_FILE_OPENSSH) < 0) {
            *why = SSH_UNREACHABLE;
            ret = errf(e, "cannot record the host key of %s: %s", name, sess_err(c->s));
        } else {
            char *dir = xstrdup(t->known_hosts);
            char *slash = strrchr(dir, '/');
            if (slash && slash != dir) {
                *slash = '\0';
                mkdir_p(dir, 0700);
            }
            free(dir);
            int fd = open(t->known_hosts, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
            if (fd < 0 || write(fd, line, outlen) != (ssize_t)outlen) {
                *why = SSH_UNREACHABLE;
                ret = errf(e, "cannot append the host key of %s to %s: %s", name, t->known_hosts,
                           strerror(errno));
            } else {
                log_info("recorded the host key of %s in %s", name, t->known_hosts);
            }
            if (fd >= 0)
                close(fd);
        }
    } else {
        *why = SSH_UNREACHABLE;
        ret = errf(e, "cannot check the host key of %s: %s", name, sess_err(c->s));
    }
    free(name);
    libssh2_knownhost_free(kh);
    return ret;
}

static void kbd_callback(const char *name, int name_len, const char *instruction, int instruction_len,
                         int num_prompts, const LIBSSH2_USERAUTH_KBDINT_PROMPT *prompts,
                         LIBSSH2_USERAUTH_KBDINT_RESPONSE *responses, void **abstract)
{
    (void)name; (void)name_len; (void)instruction; (void)instruction_len; (void)prompts;
    struct ssh_conn *c = *abstract;
    for (int i = 0; i < num_prompts; i++) {
        /* libssh2 frees the responses with the session's allocator (free) */
        responses[i].text = strdup(c->password ? c->password : "");
        responses[i].length = responses[i].text ? (unsigned)strlen(responses[i].text) : 0;
    }
}

/* True when the private key file holds an RSA key (PEM or OpenSSH format). */
static int key_is_rsa(const char *path)
{
    char *s = read_file(path, NULL);
    if (!s)
        return 0;
    int rsa = strstr(s, "BEGIN RSA PRIVATE KEY") != NULL;
    const char *p = strstr(s, "BEGIN OPENSSH PRIVATE KEY-----");
    if (!rsa && p) {
        /* the key type is a string near the start (its first 512 bytes) of the base64 blob */
        p = strchr(p, '\n');
        const char *q = p ? strchr(p, '-') : NULL;
        char *blob = p ? xstrndup(p, q ? (size_t)(q - p) : strlen(p)) : NULL;
        size_t n = 0;
        char *dec = blob ? b64_decode(blob, &n) : NULL;
        rsa = dec && memmem(dec, n < 512 ? n : 512, "ssh-rsa", 7) != NULL;
        free(dec);
        free(blob);
    }
    free(s);
    return rsa;
}

static int authenticate(struct ssh_conn *c, const struct ssh_target *t, enum ssh_failure *why,
                        struct errbuf *e)
{
    const char *methods = libssh2_userauth_list(c->s, t->user, (unsigned)strlen(t->user));
    if (!methods) {
        if (libssh2_userauth_authenticated(c->s))
            return 0; /* "none" was accepted */
        *why = SSH_UNREACHABLE;
        return errf(e, "unreachable: %s", sess_err(c->s));
    }
    int rc;
    if (t->password) {
        if (strstr(methods, "password"))
            rc = libssh2_userauth_password(c->s, t->user, t->password);
        else if (strstr(methods, "keyboard-interactive"))
            rc = libssh2_userauth_keyboard_interactive(c->s, t->user, kbd_callback);
        else {
            *why = SSH_AUTH_REFUSED;
            return errf(e, "authentication refused: the server accepts only %s for user %s, not a password",
                        methods, t->user);
        }
        if (rc == 0)
            return 0;
        *why = rc == LIBSSH2_ERROR_TIMEOUT ? SSH_UNREACHABLE : SSH_AUTH_REFUSED;
        return errf(e, "authentication refused: wrong password for user %s? (%s)", t->user, sess_err(c->s));
    }
    if (!strstr(methods, "publickey")) {
        *why = SSH_AUTH_REFUSED;
        return errf(e, "authentication refused: the server accepts only %s for user %s, not a key", methods,
                    t->user);
    }
    rc = libssh2_userauth_publickey_fromfile_ex(c->s, t->user, (unsigned)strlen(t->user), NULL, t->key_file,
                                                t->passphrase ? t->passphrase : "");
    if (rc == 0)
        return 0;
    if (rc == LIBSSH2_ERROR_FILE) {
        *why = SSH_KEY_UNREADABLE;
        return errf(e, "cannot use the key %s: %s (wrong sshPassphrase, or not a private key?)", t->key_file,
                    sess_err(c->s));
    }
    if (rc == LIBSSH2_ERROR_TIMEOUT || rc == LIBSSH2_ERROR_SOCKET_RECV || rc == LIBSSH2_ERROR_SOCKET_SEND) {
        *why = SSH_UNREACHABLE;
        return errf(e, "unreachable: %s", sess_err(c->s));
    }
    if (key_is_rsa(t->key_file)) {
        *why = SSH_RSA_REFUSED;
        return errf(e, "RSA key refused by the server: %s is an RSA key and libssh2 signs with SHA-1 "
                       "(ssh-rsa), which OpenSSH 8.8 and later refuse; use an ed25519 key "
                       "(ssh-keygen -t ed25519) and add its .pub to the user's authorized_keys",
                    t->key_file);
    }
    *why = SSH_AUTH_REFUSED;
    return errf(e, "authentication refused: the key %s is not accepted for user %s (%s)", t->key_file, t->user,
                sess_err(c->s));
}

int ssh_connect(const struct ssh_target *t, struct ssh_conn **out, enum ssh_failure *why, struct errbuf *e)
{
    static int inited;
    *out = NULL;
    *why = SSH_OK;
    if (!inited) {
        if (libssh2_init(0) != 0)
            return *why = SSH_UNREACHABLE, errf(e, "libssh2_init failed");
        inited = 1;
    }
    int fd = tcp_connect(t, e);
    if (fd < 0)
        return *why = SSH_UNREACHABLE, -1;
    struct ssh_conn *c = xcalloc(1, sizeof *c);
    c->fd = fd;
    c->op_timeout_ms = t->op_timeout_ms;
    c->password = t->password ? xstrdup(t->password) : NULL;
    c->s = libssh2_session_init_ex(NULL, NULL, NULL, c);
    if (!c->s) {
        ssh_close(c);
        return *why = SSH_UNREACHABLE, errf(e, "cannot create an SSH session");
    }
    libssh2_session_set_blocking(c->s, 1);
    /* the handshake is part of connecting: the connect deadline applies */
    libssh2_session_set_timeout(c->s, t->connect_timeout_ms);
    if (libssh2_session_handshake(c->s, fd) != 0) {
        errf(e, "unreachable: SSH handshake with %s port %d failed: %s", t->host, t->port, sess_err(c->s));
        ssh_close(c);
        return *why = SSH_UNREACHABLE, -1;
    }
    libssh2_session_set_timeout(c->s, t->op_timeout_ms);
    if (check_host_key(c, t, why, e) < 0 || authenticate(c, t, why, e) < 0) {
        ssh_close(c);
        return -1;
    }
    *out = c;
    return 0;
}

void ssh_close(struct ssh_conn *c)
{
    if (!c)
        return;
    if (c->s) {
        /* a dead peer must not hold us: the disconnect is best effort, briefly */
        libssh2_session_set_timeout(c->s, 1000);
        if (c->sftp)
            libssh2_sftp_shutdown(c->sftp);
        libssh2_session_disconnect(c->s, "bye");
        libssh2_session_free(c->s);
    }
    if (c->fd >= 0)
        close(c->fd);
    if (c->password) {
        memset(c->password, 0, strlen(c->password));
        free(c->password);
    }
    free(c);
}

static int drain_stream(LIBSSH2_CHANNEL *ch, int stream, struct strbuf *sb, struct errbuf *e, LIBSSH2_SESSION *s)
{
    char buf[32768];
    for (;;) {
        ssize_t n = libssh2_channel_read_ex(ch, stream, buf, sizeof buf);
        if (n > 0) {
            if (sb)
                sb_add(sb, buf, (size_t)n);
            continue;
        }
        if (n == 0)
            return 0;
        return errf(e, "reading the command's output: %s", sess_err(s));
    }
}

int ssh_exec(struct ssh_conn *c, const char *cmd, const char *in, size_t inlen, struct strbuf *out,
             struct strbuf *err, int *status, struct errbuf *e)
{
    *status = -1;
    LIBSSH2_CHANNEL *ch = libssh2_channel_open_session(c->s);
    if (!ch)
        return errf(e, "cannot open a channel: %s", sess_err(c->s));
    /* stderr of the command arrives on its own stream; without err it is dropped */
    int rc = -1;
    if (libssh2_channel_exec(ch, cmd) != 0) {
        errf(e, "cannot run a command: %s", sess_err(c->s));
        goto out;
    }
    size_t off = 0;
    while (off < inlen) {
        ssize_t n = libssh2_channel_write(ch, in + off, inlen - off);
        if (n < 0) {
            errf(e, "writing the command's input: %s", sess_err(c->s));
            goto out;
        }
        off += (size_t)n;
    }
    if (libssh2_channel_send_eof(ch) != 0) {
        errf(e, "closing the command's input: %s", sess_err(c->s));
        goto out;
    }
    /* small stderr: read stdout to its end, then stderr (both within the window) */
    if (drain_stream(ch, 0, out, e, c->s) < 0 || drain_stream(ch, SSH_EXTENDED_DATA_STDERR, err, e, c->s) < 0)
        goto out;
    if (libssh2_channel_close(ch) != 0 || libssh2_channel_wait_closed(ch) != 0) {
        errf(e, "closing a channel: %s", sess_err(c->s));
        goto out;
    }
    *status = libssh2_channel_get_exit_status(ch);
    rc = 0;
out:
    libssh2_channel_free(ch);
    return rc;
}

int ssh_put_file(struct ssh_conn *c, const char *local_path, const char *remote_path, long mode,
                 struct errbuf *e)
{
    if (!c->sftp) {
        c->sftp = libssh2_sftp_init(c->s);
        if (!c->sftp)
            return errf(e, "cannot start SFTP: %s", sess_err(c->s));
    }
    int fd = open(local_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errf(e, "cannot read %s: %s", local_path, strerror(errno));
    LIBSSH2_SFTP_HANDLE *h = libssh2_sftp_open(c->sftp, remote_path,
                                               LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_TRUNC, mode);
    if (!h) {
        close(fd);
        return errf(e, "cannot create %s: SFTP error %lu (%s)", remote_path, libssh2_sftp_last_error(c->sftp),
                    sess_err(c->s));
    }
    int rc = 0;
    char buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0) {
            rc = errf(e, "cannot read %s: %s", local_path, strerror(errno));
            break;
        }
        if (n == 0)
            break;
        ssize_t off = 0;
        while (off < n) {
            ssize_t w = libssh2_sftp_write(h, buf + off, (size_t)(n - off));
            if (w < 0) {
                rc = errf(e, "writing %s: %s", remote_path, sess_err(c->s));
                break;
            }
            off += w;
        }
        if (rc < 0)
            break;
    }
    if (libssh2_sftp_close(h) != 0 && rc == 0)
        rc = errf(e, "closing %s: %s", remote_path, sess_err(c->s));
    close(fd);
    return rc;
}

struct ssh_shell {
    struct ssh_conn *c;
    LIBSSH2_CHANNEL *ch;
};

int ssh_shell_open(struct ssh_conn *c, const char *cmd, struct ssh_shell **out, struct errbuf *e)
{
    *out = NULL;
    LIBSSH2_CHANNEL *ch = libssh2_channel_open_session(c->s);
    if (!ch)
        return errf(e, "cannot open a channel: %s", sess_err(c->s));
    libssh2_channel_handle_extended_data2(ch, LIBSSH2_CHANNEL_EXTENDED_DATA_IGNORE);
    if (libssh2_channel_exec(ch, cmd) != 0) {
        errf(e, "cannot run a command: %s", sess_err(c->s));
        libssh2_channel_free(ch);
        return -1;
    }
    struct ssh_shell *sh = xcalloc(1, sizeof *sh);
    sh->c = c;
    sh->ch = ch;
    *out = sh;
    return 0;
}

int ssh_shell_send(struct ssh_shell *sh, const char *buf, size_t len, struct errbuf *e)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = libssh2_channel_write(sh->ch, buf + off, len - off);
        if (n < 0)
            return errf(e, "writing to the remote shell: %s", sess_err(sh->c->s));
        off += (size_t)n;
    }
    return 0;
}

int ssh_shell_recv(struct ssh_shell *sh, const char *marker, struct strbuf *out, struct errbuf *e)
{
    size_t mlen = strlen(marker);
    char buf[32768];
    for (;;) {
        if (out->len >= mlen && memcmp(out->buf + out->len - mlen, marker, mlen) == 0) {
            out->len -= mlen;
            out->buf[out->len] = '\0';
            return 0;
        }
        ssize_t n = libssh2_channel_read(sh->ch, buf, sizeof buf);
        if (n > 0) {
            sb_add(out, buf, (size_t)n);
            continue;
        }
        if (n == 0)
            return errf(e, "the remote shell ended");
        return errf(e, "reading from the remote shell: %s", sess_err(sh->c->s));
    }
}

void ssh_shell_close(struct ssh_shell *sh)
{
    if (!sh)
        return;
    libssh2_session_set_timeout(sh->c->s, 1000);
    libssh2_channel_free(sh->ch);
    libssh2_session_set_timeout(sh->c->s, sh->c->op_timeout_ms);
    free(sh);
}

/* ssh.h: one SSH connection (libssh2) to a remote machine, used for exec channels and
 * SFTP. Every operation has a deadline, so a dead host costs a bounded wait, never a
 * hang. Host keys are checked against an OpenSSH known_hosts file. */
#ifndef TRIALQ_SSH_H
#define TRIALQ_SSH_H

#include <stddef.h>

#include "common/common.h"

struct ssh_target {
    const char *host;
    int port;
    const char *user;
    const char *password;    /* password or keyboard-interactive; NULL: key auth */
    const char *key_file;    /* private key (OpenSSH or PEM) */
    const char *passphrase;  /* of key_file, may be NULL */
    const char *known_hosts; /* OpenSSH known_hosts file */
    int accept_new_host_key; /* record an unknown host's key instead of refusing */
    int connect_timeout_ms;
    int op_timeout_ms;       /* every blocking libssh2 call */
};

/* Why a connection failed, for the machine's health and the user's message. */
enum ssh_failure {
    SSH_OK = 0,
    SSH_UNREACHABLE,     /* resolve, connect, handshake or I/O failed / timed out */
    SSH_HOSTKEY_UNKNOWN, /* not in known_hosts and accepting new keys is off */
    SSH_HOSTKEY_CHANGED, /* known_hosts has another key for this host */
    SSH_AUTH_REFUSED,    /* wrong password / key not authorized */
    SSH_RSA_REFUSED,     /* an RSA key the server refused (SHA-1 signatures) */
    SSH_KEY_UNREADABLE,  /* the private key file cannot be used (passphrase?) */
};

struct ssh_conn;

/* Connects, checks the host key, authenticates. Returns 0, or -1 with *why and e->msg
 * naming the cause (the caller prefixes the machine). */
int ssh_connect(const struct ssh_target *t, struct ssh_conn **out, enum ssh_failure *why,
                struct errbuf *e);
void ssh_close(struct ssh_conn *c);

/* Runs cmd on a new channel of the connection, feeding `in` (may be NULL) on its
 * stdin, collecting stdout (and stderr, when err is given) until the command ends.
 * *status is its exit status. -1 when the connection failed (it must be reopened). */
int ssh_exec(struct ssh_conn *c, const char *cmd, const char *in, size_t inlen, struct strbuf *out,
             struct strbuf *err, int *status, struct errbuf *e);

/* A long-lived command on its own channel (e.g. `sh -s`) fed with scripts: saves the
 * remote side a process start per call. Its stderr is discarded. */
struct ssh_shell;
int ssh_shell_open(struct ssh_conn *c, const char *cmd, struct ssh_shell **out, struct errbuf *e);
int ssh_shell_send(struct ssh_shell *sh, const char *buf, size_t len, struct errbuf *e);
/* Reads the shell's stdout into out until it ends with `marker` (removed). -1 when the
 * channel failed or ended (the connection must be reopened). */
int ssh_shell_recv(struct ssh_shell *sh, const char *marker, struct strbuf *out, struct errbuf *e);
void ssh_shell_close(struct ssh_shell *sh);

/* Writes a local file to remote_path over SFTP (the session's one SFTP channel). */
int ssh_put_file(struct ssh_conn *c, const char *local_path, const char *remote_path, long mode,
                 struct errbuf *e);

#endif

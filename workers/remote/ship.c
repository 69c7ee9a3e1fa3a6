/* remote/ship.c: what the remote platform ships to each machine (workers/remote/remote.h):
 * the trial code and our SDK packed once (tar.gz, .nniignore honoured), the runner at
 * every start, unpacked under the experiment's dir E. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "workers/nniignore.h"
#include "workers/remote/remote.h"

/* ---------------- shipping ---------------- */

static int run_tar(char *const argv[], struct errbuf *e)
{
    pid_t pid = fork();
    if (pid < 0)
        return errf(e, "fork: %s", strerror(errno));
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return errf(e, "tar failed (status %d)", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}

/* Packs the code directory (honouring .nniignore) and our SDK into two tar.gz files. */
int remote_pack(struct worker *w, struct remote_state *rs, struct errbuf *e)
{
    const cJSON *code = worker_config_item(w, "trialCodeDirectory");
    const char *root = cJSON_IsString(code) ? code->valuestring : ".";
    struct code_list cl;
    if (code_list_build(root, w->exp.config_file, &cl, e) < 0)
        return -1;
    char *dir = xasprintf("%s/.remote", w->exp.exp_dir);
    mkdir_p(dir, 0700);
    char *listf = xasprintf("%s/code.list", dir);
    rs->code_tgz = xasprintf("%s/nni-code.tar.gz", dir);
    rs->sdk_tgz = xasprintf("%s/sdk.tar.gz", dir);
    int rc = write_file_replace(listf, cl.paths, cl.len, 0600);
    log_info("code directory %s: %d files and directories, %lld bytes to ship", root, cl.entries,
             (long long)cl.bytes);
    code_list_free(&cl);
    if (rc < 0) {
        rc = errf(e, "cannot write %s: %s", listf, strerror(errno));
    } else {
        char *const targv[] = {"tar", "-czf", rs->code_tgz, "-C", (char *)root, "--no-recursion", "--null",
                               "-T", listf, NULL};
        rc = run_tar(targv, e);
        if (rc < 0)
            errprefix(e, "packing %s", root);
    }
    if (rc == 0) {
        char *sdk = trialq_data_dir("python", "nni", TRIALQ_BUILD_TREE("/sdk/python"));
        char *const sargv[] = {"tar", "-czf", rs->sdk_tgz, "--exclude=__pycache__", "-C", sdk, "nni", NULL};
        rc = run_tar(sargv, e);
        if (rc < 0)
            errprefix(e, "packing the nni SDK of %s", sdk);
        free(sdk);
    }
    free(listf);
    free(dir);
    return rc;
}

/* What every command on the machine starts with (pythonPath first on PATH). */
void remote_cmd_prefix(struct strbuf *sb, const struct rmachine *m)
{
    if (m->python_path) {
        sb_puts(sb, "PATH=");
        sh_quote(sb, m->python_path);
        sb_puts(sb, ":\"$PATH\"; export PATH; ");
    }
}

/* Work dir, runner, code: everything a machine needs before its first trial. */
int remote_prepare_machine(struct worker *w, struct remote_state *rs, struct rmachine *m, struct errbuf *e)
{
    struct strbuf cmd, out;
    sb_init(&cmd);
    sb_init(&out);
    remote_cmd_prefix(&cmd, m);
    /* the experiment's dir is the owner's alone (0700, as $NNI_HOME is here): parameters,
     * code and outputs stay private on a shared host whatever the files' own modes */
    sb_puts(&cmd, "E=\"$HOME/nni-experiments/\"");
    sh_quote(&cmd, w->exp_id); /* checked where it comes from (create, load), quoted all the same */
    sb_puts(&cmd, "; mkdir -p \"$E/trials\" && chmod 700 \"$E\" && "
                  "[ -w \"$E/trials\" ] || "
                  "{ echo \"cannot write to its work dir $E\" >&2; exit 3; }; "
                  "cat > \"$E/runner.sh.tmp\" && mv -f \"$E/runner.sh.tmp\" \"$E/runner.sh\" || exit 3; "
                  "echo \"$E\"; [ -f \"$E/nni-code/.trialq-shipped\" ] && echo shipped || echo new; "
                  "python3 -c 'import nni, nni.runtime' >/dev/null 2>&1 && echo nni || echo no-nni");
    int st;
    int rc = remote_run_cmd(m, cmd.buf, remote_runner_sh, strlen(remote_runner_sh), &out, &st, e);
    sb_free(&cmd);
    if (rc < 0 || st != 0) {
        if (rc == 0)
            errprefix(e, "cannot prepare its work dir");
        sb_free(&out);
        return -1;
    }
    char root[4096] = "", shipped[32] = "", nni[32] = "";
    if (sscanf(out.buf ? out.buf : "", "%4095[^\n]\n%31s\n%31s", root, shipped, nni) != 3 || root[0] != '/') {
        sb_free(&out);
        return errf(e, "unexpected answer of the shell (a login banner on stdout?)");
    }
    sb_free(&out);
    free(m->root);
    m->root = xstrdup(root);
    m->has_nni = strcmp(nni, "nni") == 0;
    if (strcmp(shipped, "shipped") == 0)
        return 0;
    /* once per machine per experiment: upload, unpack, then mark it shipped */
    char *rc_tgz = xasprintf("%s/nni-code.tar.gz", root), *rs_tgz = xasprintf("%s/sdk.tar.gz", root);
    rc = ssh_put_file(m->conn, rs->code_tgz, rc_tgz, 0600, e);
    if (rc == 0)
        rc = ssh_put_file(m->conn, rs->sdk_tgz, rs_tgz, 0600, e);
    free(rc_tgz);
    free(rs_tgz);
    if (rc < 0)
        return errprefix(e, "cannot upload the code");
    sb_init(&cmd);
    sb_puts(&cmd, "cd ");
    sh_quote(&cmd, root);
    sb_puts(&cmd, " && rm -rf nni-code .trialq-sdk && mkdir -p nni-code .trialq-sdk"
                  " && tar -xzf nni-code.tar.gz -C nni-code && tar -xzf sdk.tar.gz -C .trialq-sdk"
                  " && rm -f nni-code.tar.gz sdk.tar.gz && : > nni-code/.trialq-shipped");
    rc = remote_run_cmd(m, cmd.buf, NULL, 0, NULL, &st, e);
    sb_free(&cmd);
    if (rc < 0 || st != 0)
        return errprefix(e, "cannot unpack the code in %s", root);
    log_info("machine %s: code shipped to %s/nni-code", m->label, root);
    return 0;
}

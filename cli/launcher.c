/* launcher.c: nnictl launcher path | install: how NNI's launcher (the Python API's
 * Experiment.run(), NNI's own nnictl) finds trialq's nni_node before NNI's: a PYTHONPATH
 * line to print, or a .pth file in a python's site-packages. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/common.h"

/* The folder holding nni_node: installed <prefix>/share/trialq/launcher beside
 * <prefix>/bin/trialq, else the source tree's sdk/launcher (absolute; caller frees). */
static char *launcher_dir(void)
{
    char *dir = trialq_data_dir("launcher", "nni_node/node", TRIALQ_BUILD_TREE("/sdk/launcher"));
    char *real = realpath(dir, NULL);
    if (real) {
        free(dir);
        dir = real;
    }
    return dir;
}

static int cmd_path_fn(int argc, char **argv)
{
    if (argc > 1)
        return cli_error("usage: %s", cmd_launcher_path.usage);
    char *dir = launcher_dir();
    printf("export PYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH}\n", dir);
    free(dir);
    return 0;
}

static const struct option install_opts[] = {
    {"python", required_argument, NULL, 'p'}, {"user", no_argument, NULL, 'u'}, {NULL, 0, NULL, 0}};
static int cmd_install_fn(int argc, char **argv)
{
    const char *py = py_interpreter();
    int user = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:u", install_opts, NULL)) != -1) {
        switch (c) {
        case 'p': py = optarg; break;
        case 'u': user = 1; break;
        default: return cli_error("usage: %s", cmd_launcher_install.usage);
        }
    }
    if (optind < argc)
        return cli_error("usage: %s", cmd_launcher_install.usage);
    char *where = user ? "import site; print(site.getusersitepackages())"
                       : "import sysconfig; print(sysconfig.get_paths()['purelib'])";
    char *pargv[] = {(char *)py, "-c", where, NULL};
    char *out = NULL, *err = NULL;
    int st = run_capture(pargv, 30000, &out, &err);
    size_t n = out ? strlen(out) : 0;
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = '\0';
    int rc = 0;
    if (st != 0 || n == 0) {
        rc = cli_error("%s: cannot ask it for its site-packages folder (%s)", py,
                       err && *err ? err : st == -1 ? "it cannot be run" : "no answer");
    } else {
        char *dir = launcher_dir();
        /* an import line: the folder goes first, before NNI's own nni_node in
         * site-packages (a plain path line would be appended after it) */
        char *line = xasprintf("import sys; sys.path.insert(0, '%s')\n", dir);
        char *pth = xasprintf("%s/trialq_nni_node.pth", out);
        if (strchr(dir, '\'') || strchr(dir, '\\'))
            rc = cli_error("%s: a quote or backslash in the folder's name; put it on PYTHONPATH instead", dir);
        else if (mkdir_p(out, 0755) < 0 || write_file_atomic(pth, line, strlen(line), 0644) < 0)
            rc = cli_error("cannot write %s: %s%s", pth, strerror(errno), user ? "" : " (try --user)");
        else
            printf("wrote %s: NNI's launcher in %s now starts trialq (nni_node from %s)\n", pth, py, dir);
        free(pth);
        free(line);
        free(dir);
    }
    free(out);
    free(err);
    return rc;
}

const struct cli_cmd cmd_launcher_path = {
    "launcher", "path", "nnictl launcher path", cmd_path_fn,
    "Prints the PYTHONPATH line that puts trialq's nni_node first, for NNI's Python API and "
    "NNI's nnictl.",
    NULL};
const struct cli_cmd cmd_launcher_install = {
    "launcher", "install", "nnictl launcher install [--python PY] [--user]", cmd_install_fn,
    "Writes a .pth file into a Python's site-packages so that NNI's launcher starts trialq.",
    install_opts};

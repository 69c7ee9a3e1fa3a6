/* slurm_cmd_cli: workers/slurm/slurm_cmd.c on the command line, so that tests/e2e/91 can hand
 * its sbatch command line and batch script to a real Slurm and read squeue's answer as
 * the platform will.
 *   slurm_cmd_cli submit EXP TRIAL ATTEMPT SEQ TRIAL_DIR CODE_DIR MAX_TRIAL_SECONDS TS_JSON COMMAND
 *     writes TRIAL_DIR/.nni/job.sh and prints sbatch's argv, one item a line
 *   slurm_cmd_cli status EXP < squeue.json
 *     prints each job of EXP: "<trial> <attempt> <job id> <state> <outcome> <exit code> <message>"
 * Exit status 2 on bad usage or input (the message on stderr). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/slurm/slurm_cmd.h"

static const char *const outcome_names[] = {"WAITING", "RUNNING", "SUCCEEDED", "FAILED",
                                            "CANCELED", "RETRY", "UNKNOWN"};

static int submit(char **a)
{
    struct slurm_trial t = {
        .exp_id = a[0],
        .trial_id = a[1],
        .attempt = atoi(a[2]),
        .sequence = atoll(a[3]),
        .trial_dir = a[4],
        .code_dir = a[5],
        .max_trial_seconds = atoll(a[6]),
    };
    cJSON *ts = cJSON_Parse(a[7]);
    if (!cJSON_IsObject(ts)) {
        fprintf(stderr, "slurm_cmd_cli: TS_JSON is not a JSON object\n");
        cJSON_Delete(ts);
        return 2;
    }
    char *nni = path_join(t.trial_dir, ".nni");
    char *path = path_join(nni, "job.sh");
    char **argv = NULL;
    struct errbuf e;
    int rc = 2;
    if (slurm_sbatch_argv(ts, &t, path, &argv, &e) < 0) {
        fprintf(stderr, "slurm_cmd_cli: %s\n", e.msg);
    } else {
        char *script = slurm_batch_script(ts, a[8], &t);
        if (mkdir_p(nni, 0755) < 0 || write_file_replace(path, script, strlen(script), 0755) < 0) {
            perror(path);
        } else {
            for (int i = 0; argv[i]; i++)
                printf("%s\n", argv[i]);
            rc = 0;
        }
        free(script);
    }
    slurm_argv_free(argv);
    free(path);
    free(nni);
    cJSON_Delete(ts);
    return rc;
}

static int status(const char *exp)
{
    struct strbuf in;
    sb_init(&in);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0)
        sb_add(&in, buf, n);
    struct slurm_job *jobs;
    int count;
    struct errbuf e;
    int rc = slurm_squeue_parse(in.buf ? in.buf : "", in.len, exp, &jobs, &count, &e);
    sb_free(&in);
    if (rc < 0) {
        fprintf(stderr, "slurm_cmd_cli: %s\n", e.msg);
        return 2;
    }
    for (int i = 0; i < count; i++) {
        struct slurm_verdict v;
        slurm_job_verdict(&jobs[i], &v);
        printf("%s %d %lld %s %s %d %s\n", jobs[i].trial_id, jobs[i].attempt, jobs[i].job_id, jobs[i].state,
               outcome_names[v.outcome], v.exit_code, v.message);
    }
    slurm_jobs_free(jobs, count);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 11 && strcmp(argv[1], "submit") == 0)
        return submit(argv + 2);
    if (argc == 3 && strcmp(argv[1], "status") == 0)
        return status(argv[2]);
    fprintf(stderr, "usage: slurm_cmd_cli submit EXP TRIAL ATTEMPT SEQ TRIAL_DIR CODE_DIR MAX_TRIAL_SECONDS "
                    "TS_JSON COMMAND | status EXP < squeue.json\n");
    return 2;
}

#!/usr/bin/env bash
# A worker killed with SIGKILL while trials hold GPUs: its trials run on under their
# supervisors and keep their GPUs; the worker the api starts again adopts them and
# places no other trial on those GPUs (maxTrialNumberPerGpu 1), and every slot is free
# once the trials end. Then a trial whose job vanished (its supervisor and process
# group killed) is retried, and its GPU is freed for the retry.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/gpu.sh"

fake_gpus "40960 0 0 0" "40960 0 0 0"
gpu_experiment "$WORK/a" "  useActiveGpu: true" "trialGpuNumber: 1
trialConcurrency: 4
maxTrialNumber: 8"
GPU_TRIAL_SECONDS=4 gpu_create "$WORK/a/config.yml" "$WORK/a.out"
id=$(exp_id_of "$WORK/a.out")
worker_pid() { pgrep -f "trialq worker --platform local --experiment $id" | head -n1 || true; }

wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" 2 30 "2 trials never ran"
held=$(sql "SELECT group_concat(id) FROM trial WHERE experiment_id='$id' AND status='RUNNING'")
w=$(worker_pid)
[ -n "$w" ] || fail "no worker"
kill -9 "$w"
pass "killed worker $w while trials $held ran on both GPUs"

# the api starts a worker again; it adopts both trials with their GPUs
wait_until 30 sql_is "SELECT count(*) FROM event WHERE experiment_id='$id' AND reason LIKE 'adopted from %'" '>=2' ||
    fail "the trials were not adopted ($SQL_GOT)"
wait_status "$id" DONE 300
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 8 ] ||
    { sql "SELECT id, status, attempt, message FROM trial WHERE experiment_id='$id'"; fail "not all SUCCEEDED"; }
m0=$(ledger_max 0); m1=$(ledger_max 1)
[ "$m0" = 1 ] && [ "$m1" = 1 ] || fail "a GPU ran two trials at once after the crash (gpu0: $m0, gpu1: $m1)"
[ "$(sql "SELECT count(*) FROM gpu_claim")" = 0 ] || fail "claims left"
pass "adopted trials kept their GPUs; 8 SUCCEEDED, never 2 trials on a GPU"
gpu_stop --all

# a vanished job: kill a trial's supervisor and its process group; the retry gets a GPU again
rm -f "$GPU_LEDGER"
gpu_experiment "$WORK/b" "  useActiveGpu: true" "trialGpuNumber: 2
trialConcurrency: 1
maxTrialNumber: 1
maxTrialRetries: 1"
GPU_TRIAL_SECONDS=600 gpu_create "$WORK/b/config.yml" "$WORK/b.out"
b=$(exp_id_of "$WORK/b.out")
wait_sql "SELECT status FROM trial WHERE experiment_id='$b'" RUNNING 30 "the trial of b runs"
tid=$(sql "SELECT id FROM trial WHERE experiment_id='$b'")
job=$(sql "SELECT job_id FROM trial WHERE id='$tid'")
sup=$(echo "$job" | cut -d: -f2)
[ -n "$sup" ] || fail "no supervisor pid in job id '$job'"
tpid=$(awk '{ print $2 }' "$NNI_HOME/$b/trials/$tid/.nni/job.lock")
[ -n "$tpid" ] || fail "no trial process group in $tid's job.lock"
kill -9 "$sup"
kill -9 -- "-$tpid" 2>/dev/null || true   # the group may have ended with its supervisor
wait_until 60 sql_is "SELECT attempt || ' ' || status || ' ' || gpu_indices FROM trial WHERE id='$tid'" "2 RUNNING 0,1" ||
    fail "retry: $(sql "SELECT attempt, status, gpu_indices, message FROM trial WHERE id='$tid'")"
[ "$(sql "SELECT count(*) FROM gpu_claim WHERE trial_id='$tid'")" = 2 ] || fail "the retry does not hold both GPUs"
pass "the vanished job was retried on GPUs 0,1 again"
gpu_stop --all
[ "$(sql "SELECT count(*) FROM gpu_claim")" = 0 ] || fail "claims left after stop"
assert_no_leftovers

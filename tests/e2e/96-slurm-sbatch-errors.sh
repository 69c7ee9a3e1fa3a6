#!/usr/bin/env bash
# Slurm, sbatch's failures. A partition the cluster does not have is refused at create
# (sinfo). A job sbatch refuses (more GPUs than a node has: "Requested node configuration
# is not available") fails its trial with Slurm's message, and check-status says so. A
# controller that does not answer ("Socket timed out on send/recv operation", from an
# sbatch wrapper in front of the real one, until the test opens a gate; the first call
# after it takes the job and times out all the same, as a reply lost in a timeout) leaves
# the trials WAITING with that reason and check-status showing it, their submission
# retried with a back-off; the job taken despite the timeout is found in squeue and never
# submitted twice; every trial SUCCEEDED in attempt 1 with exact metrics, and the fault
# is gone from check-status once sbatch answers. With slurmctld itself stopped (a real
# outage), the running trials are recorded from their exit records, the next ones wait
# with sbatch's own words ("Unable to contact slurm controller") and are submitted once
# it is back.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/slurm.sh"
# MessageTimeout=2: with slurmctld gone, sbatch and squeue fail in 1 s, not 9
SLURM_CONF_EXTRA="MessageTimeout=2" slurm_cluster_start
export TRIALQ_SLURM_POLL_MS=300 TRIAL_STEPS=1
cs() { curl -sf "http://127.0.0.1:$1/api/v1/nni/check-status"; }

# an unknown partition: refused at create, nothing created
metrics_experiment "$WORK/bad" 1 1 5 "  platform: slurm
  partition: nope"
out=$(nnictl create --config "$WORK/bad/config.yml" --port "$(free_port)" 2>&1) && fail "partition nope accepted: $out"
echo "$out" | grep -q 'no partition "nope"' || fail "no clear message for an unknown partition: $out"
n=$(sql "SELECT count(*) FROM experiment" 2>/dev/null || true)
[ "${n:-0}" = 0 ] || fail "an experiment was created with an unknown partition"
pass "unknown partition refused at create: $(echo "$out" | head -1)"

# a job sbatch refuses: the trial FAILED with Slurm's message, check-status says it
metrics_experiment "$WORK/refused" 1 3 6 "  platform: slurm
  gpusPerTrial: 3"
port=$(free_port)
nnictl create --config "$WORK/refused/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
wait_until 30 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='FAILED'" '>=1' ||
    fail "no trial FAILED for a job sbatch refuses"
msg=$(sql "SELECT message FROM trial WHERE experiment_id='$id' AND status='FAILED' LIMIT 1")
[[ "$msg" == *"Requested node configuration is not available"* ]] || fail "the FAILED trial's message: $msg"
refused_shown() { cs "$port" | grep -q "sbatch refused a trial's job.*Requested node configuration"; }
wait_until 10 refused_shown || { cs "$port"; fail "check-status does not say sbatch refused the job"; }
pass "refused by sbatch: FAILED with '$msg'; check-status says it"
nnictl stop "$id" > /dev/null

# a controller that does not answer until the test opens the gate; the first sbatch after
# it takes the job and answers with the timeout all the same
mkdir -p "$WORK/bin"
cat > "$WORK/bin/sbatch" <<SH
#!/bin/sh
echo call >> "$WORK/sbatch.calls"
if [ ! -e "$WORK/gate" ]; then
    :
elif mkdir "$WORK/taken" 2>/dev/null; then
    /usr/bin/sbatch "\$@" > /dev/null || exit 1
else
    exec /usr/bin/sbatch "\$@"
fi
echo "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation" >&2
exit 1
SH
chmod +x "$WORK/bin/sbatch"
export PATH="$WORK/bin:$PATH"
metrics_experiment "$WORK/exp" 3 3 7 "  platform: slurm"
port=$(free_port)
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
timeout_shown() { cs "$port" | grep -q "trials cannot be submitted now: .*Socket timed out"; }
wait_until 10 timeout_shown || { cs "$port"; fail "check-status does not show sbatch's timeout"; }
wait_until 10 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='WAITING' AND waiting_reason LIKE 'not submitted yet, retried: %Socket timed out%'" '>=1' ||
    fail "no trial WAITING with sbatch's timeout as its reason"
calls=$(wc -l < "$WORK/sbatch.calls")
pass "sbatch timing out: trials WAITING with the reason, check-status shows it ($calls sbatch calls so far)"
touch "$WORK/gate"
wait_status "$id" DONE 60
slurm_one_job_each "$id" 3
ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND attempt=1")
[ "$ok" = 3 ] || { sql "SELECT id, status, attempt, message FROM trial WHERE experiment_id='$id'"; fail "$ok of 3 SUCCEEDED in attempt 1"; }
[ -d "$WORK/taken" ] || fail "no sbatch took a job and timed out"
grep -qs "re-attached" "$NNI_HOME/$id"/log/*.log || fail "the job taken despite the timeout was not re-attached"
gone() { ! cs "$port" | grep -q "cannot be submitted now"; }
wait_until 10 gone || { cs "$port"; fail "check-status still shows sbatch's timeout"; }
pass "sbatch timeouts retried with a back-off ($(wc -l < "$WORK/sbatch.calls") calls); the job taken despite one found again, one job per trial"
nnictl stop "$id" > /dev/null

# slurmctld itself gone: the running trials end all the same (their exit records), the
# next one waits with sbatch's own words, and is submitted once slurmctld is back
metrics_experiment "$WORK/down" 2 3 8 "  platform: slurm"
sed -i "s|^trialCommand: .*|trialCommand: 'while [ ! -e $WORK/gate2 ]; do sleep 0.2; done; sh metrics.sh'|" "$WORK/down/config.yml"
port=$(free_port)
nnictl create --config "$WORK/down/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
wait_until 30 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" 2 || fail "not 2 RUNNING"
slurm_ctld_stop
touch "$WORK/gate2"
wait_until 30 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'" 2 ||
    fail "the trials that ended while slurmctld was gone were not recorded"
wait_until 20 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='WAITING' AND waiting_reason LIKE 'not submitted yet, retried: %Unable to contact slurm controller%'" '>=1' ||
    fail "no trial WAITING with sbatch's words while slurmctld was gone: $(sql "SELECT id, status, waiting_reason FROM trial WHERE experiment_id='$id'")"
pass "slurmctld gone: 2 trials recorded from their exit records, the next WAITING: $(sql "SELECT waiting_reason FROM trial WHERE experiment_id='$id' AND status='WAITING' LIMIT 1")"
slurm_ctld_start
# the waiting trial is submitted once slurmctld answers (its run is Slurm's business:
# after a restart Slurm takes seconds to start a job)
waiter=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='WAITING'")
listed() { squeue -h -t all -o %j | grep -qx "nni-$id-$waiter"; }
wait_until 20 listed || fail "trial $waiter was not submitted once slurmctld was back"
jobs=$(squeue -h -t all -o %j | grep -c "^nni-$id-")
[ "$jobs" = 3 ] || fail "$jobs jobs for 3 trials"
slurm_exact_metrics "$id" SUCCEEDED
pass "slurmctld back: trial $waiter submitted; 3 jobs for 3 trials; the 2 ended meanwhile have exact metrics"
nnictl stop "$id" > /dev/null
echo "96-slurm-sbatch-errors: passed"

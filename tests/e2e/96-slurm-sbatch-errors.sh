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
# is gone from check-status once sbatch answers.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/slurm.sh"
slurm_cluster_start
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
echo "96-slurm-sbatch-errors: passed"

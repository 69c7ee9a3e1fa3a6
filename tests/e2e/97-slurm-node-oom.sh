#!/usr/bin/env bash
# Slurm, outcomes that are not the trial command's own: a node set DOWN under a running
# trial (`scontrol update state=down`: its job ends NODE_FAIL) is retried as attempt 2
# with the same parameters and ends SUCCEEDED with exact metrics; a trial that uses more
# memory than memoryPerTrial is killed by Slurm and ends FAILED named OUT_OF_MEMORY. The
# cluster enforces memory as Slurm does without cgroups: jobacct_gather/linux with
# OverMemoryKill and memory as a consumable (CR_CPU_Memory). Slurm 22.05 then leaves the
# job FAILED (reason JobLaunchFailure), not OUT_OF_MEMORY: the trial is named so from
# slurmstepd's words in the job's slurm.stderr. (A TIMEOUT takes Slurm over a minute:
# its mapping is checked in the unit test against squeue's answer recorded by e2e/90.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/slurm.sh"
SLURM_CONF_EXTRA="JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=1
JobAcctGatherParams=OverMemoryKill
SelectTypeParameters=CR_CPU_Memory" slurm_cluster_start
export TRIALQ_SLURM_POLL_MS=300 TRIAL_STEPS=2

metrics_experiment "$WORK/exp" 3 3 41 "  platform: slurm
  memoryPerTrial: 100mb"
# the first trial to start takes 300 MB; the others wait for the gate, then report
cat > "$WORK/exp/trial.sh" <<SH
touch "\$NNI_OUTPUT_DIR/started"
if mkdir "$WORK/hog" 2>/dev/null; then
    exec python3 -c 'import time; b = bytearray(300 << 20); b[::4096] = b"x" * len(b[::4096]); time.sleep(60)'
fi
while [ ! -e "$WORK/gate" ]; do sleep 0.2; done
exec sh metrics.sh
SH
sed -i "s|^trialCommand: .*|trialCommand: sh trial.sh|" "$WORK/exp/config.yml"
port=$(free_port)
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")

# memory: the hog is killed by Slurm and named so
wait_until 30 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='FAILED'" 1 ||
    fail "the trial over its memory did not fail"
hog=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='FAILED'")
msg=$(sql "SELECT message FROM trial WHERE id='$hog'")
[[ "$msg" == "OUT_OF_MEMORY: "*"exceeded memory limit"* ]] || fail "the trial over its memory: $msg"
pass "over memoryPerTrial: FAILED, $msg"

# a node DOWN under a running trial: NODE_FAIL, retried as attempt 2
wait_until 30 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" 2 ||
    fail "not 2 trials RUNNING"
victim=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='RUNNING' ORDER BY sequence LIMIT 1")
wait_file "$NNI_HOME/$id/trials/$victim/started" 30 "trial $victim did not start"
job=$(sql "SELECT job_id FROM trial WHERE id='$victim'")
node=$(squeue -h -j "$job" -o %N)
[ -n "$node" ] || fail "no node for job $job"
scontrol update nodename="$node" state=down reason=test
slurm_wait_state "$job" NODE_FAIL 30
wait_until 30 sql_is "SELECT attempt FROM trial WHERE id='$victim'" 2 || fail "trial $victim was not retried"
scontrol update nodename="$node" state=resume
touch "$WORK/gate"
wait_status "$id" DONE 60
[ "$(sql "SELECT status || ' ' || attempt FROM trial WHERE id='$victim'")" = "SUCCEEDED 2" ] ||
    fail "the trial whose node went down: $(sql "SELECT status, attempt, message FROM trial WHERE id='$victim'")"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 2 ] ||
    fail "not 2 trials SUCCEEDED: $(sql "SELECT id, status, attempt, message FROM trial WHERE experiment_id='$id'")"
slurm_exact_metrics "$id" SUCCEEDED
pass "node $node DOWN: job $job NODE_FAIL, trial $victim SUCCEEDED in attempt 2 with exact metrics"
nnictl stop "$id" > /dev/null
echo "97-slurm-node-oom: passed"

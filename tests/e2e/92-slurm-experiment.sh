#!/usr/bin/env bash
# Slurm, local mode: 20 trials at concurrency 5 on a cluster of 3 one-CPU nodes run to
# DONE, one batch job per trial named nni-<exp>-<trial> with the comment
# trialq:<exp>:<trial>:1, each submitted once; the jobs beyond the cluster's capacity
# wait in Slurm's queue (PENDING, reason Resources); the metric rows are exactly what the
# trials wrote in their dirs; the worker asks squeue once per poll interval for all jobs,
# not once per trial. A loginNode that does not answer is refused at create.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/slurm.sh"
slurm_cluster_start
export TRIALQ_SLURM_POLL_MS=500

# squeue behind a counting wrapper: the worker's calls are counted
mkdir -p "$WORK/bin"
cat > "$WORK/bin/squeue" <<SH
#!/bin/sh
echo "\$*" >> "$WORK/squeue.calls"
exec /usr/bin/squeue "\$@"
SH
chmod +x "$WORK/bin/squeue"
export PATH="$WORK/bin:$PATH"

port=$(free_port)
metrics_experiment "$WORK/exp" 5 20 21 "  platform: slurm
  sharedDirectory: $WORK/shared"
# the trials hold until the test opens the gate: until then 3 run and 2 wait in Slurm
sed -i "s|^trialCommand: .*|trialCommand: 'while [ ! -e $WORK/gate ]; do sleep 0.2; done; sh metrics.sh'|" "$WORK/exp/config.yml"
grep -q "gate ]" "$WORK/exp/config.yml" || fail "the gate is not in the config"
export TRIAL_STEPS=3 TRIAL_SLEEP=0.3
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || { cat "$WORK/create.out"; fail "no experiment id"; }

# beyond the 3 CPUs the jobs wait in Slurm's queue with its reason
waited=
for _ in $(seq 1 200); do
    if squeue -h -t PENDING -o '%j %r' | grep -q "^nni-$id-.* Resources$"; then waited=1; break; fi
    sleep 0.1
done
[ -n "$waited" ] || fail "no job of the experiment waited for resources at concurrency 5 on 3 CPUs"
# ... and their trials wait with Slurm's reason, in the database, the REST API and trial ls
# (each look appends to its log: the REST API and trial ls must each have shown one)
reason_shown() {
    sql "SELECT id, waiting_reason FROM trial WHERE experiment_id='$id' AND status='WAITING'" >> "$WORK/waiting.db"
    curl -sf "http://127.0.0.1:$port/api/v1/nni/trial-jobs" | "$PY" -c 'import json, sys
for t in json.load(sys.stdin):
    if t["status"] == "WAITING": print(t["trialJobId"], t.get("waitingReason"))' >> "$WORK/waiting.rest"
    nnictl trial ls "$id" | "$PY" -c 'import json, sys
for t in json.load(sys.stdin):
    if t["status"] == "WAITING": print(t["trialJobId"], t.get("waitingReason"))' >> "$WORK/waiting.ls"
    grep -q "|Slurm: " "$WORK/waiting.db" && grep -q " Slurm: " "$WORK/waiting.rest" && grep -q " Slurm: " "$WORK/waiting.ls"
}
wait_until 30 reason_shown ||
    { tail -n 3 "$WORK"/waiting.*; fail "no WAITING trial showed Slurm's reason in the database, the REST API and trial ls"; }
pass "jobs beyond the cluster's capacity wait in Slurm; their trials are WAITING with Slurm's reason"
touch "$WORK/gate"

wait_status "$id" DONE 300
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id'")" = 20 ] || fail "not 20 trials"
ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND platform='slurm'")
[ "$ok" = 20 ] || { sql "SELECT id, status, message FROM trial WHERE experiment_id='$id'"; fail "$ok of 20 SUCCEEDED"; }
pass "20 trials SUCCEEDED on slurm"

# one job per trial, submitted once, named and commented as planned
squeue -t all --json | "$PY" -c '
import json, sys
exp = sys.argv[1]
jobs = [j for j in json.load(sys.stdin)["jobs"] if j["name"].startswith("nni-%s-" % exp)]
names = [j["name"] for j in jobs]
assert len(jobs) == 20 and len(set(names)) == 20, names
for j in jobs:
    tid = j["name"][len("nni-%s-" % exp):]
    assert j["comment"] == "trialq:%s:%s:1" % (exp, tid), j["comment"]
    assert j["job_state"] == "COMPLETED", (j["name"], j["job_state"])
print("20 jobs ok")' "$id" || fail "the experiment's jobs in squeue"
for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$id'"); do
    job=$(sql "SELECT job_id FROM trial WHERE id='$tid'")
    [ "$(squeue -h -t all -j "$job" -o %j)" = "nni-$id-$tid" ] || fail "trial $tid has job '$job'"
    dir=$(sql "SELECT trial_dir FROM trial WHERE id='$tid'")
    [ "$dir" = "$WORK/shared/$id/trials/$tid" ] || fail "trial dir of $tid: $dir"
    # the metric rows are exactly what the trial wrote
    want=$(sort "$dir/written.log")
    got=$(sql "SELECT type || ' ' || sequence || ' ' || value FROM metric WHERE trial_id='$tid'" | sort)
    [ "$want" = "$got" ] || { echo "want: $want"; echo "got: $got"; fail "metrics of $tid differ"; }
    x=$(sed -n 's/.*"x":\([-0-9.e+]*\).*/\1/p' "$dir/parameter.cfg")
    fm=$(sql "SELECT final_metric FROM trial WHERE id='$tid'")
    awk -v a="$fm" -v b="$x" 'BEGIN { exit !(a + 0 == b + 0) }' || fail "final metric of $tid is $fm, x is $x"
done
pass "20 jobs nni-<exp>-<trial>, each submitted once; metric rows equal what the trials wrote"

# squeue: once per poll interval for the whole experiment, not once per trial and poll
calls=$(grep -c -- --json "$WORK/squeue.calls")
secs=$(( $(sql "SELECT max(end_time) - min(start_time) FROM trial WHERE experiment_id='$id'") / 1000 + 1 ))
echo "squeue --json calls: $calls over ${secs}s"
[ "$calls" -le $((secs * 3 + 10)) ] || fail "$calls squeue calls in ${secs}s at a 500 ms poll interval"
pass "$calls squeue calls for 20 trials over ${secs}s"
nnictl stop "$id" > /dev/null

# the SSH mode: a login node that does not answer is refused at create, nothing created
metrics_experiment "$WORK/exp2" 1 1 22 "  platform: slurm
  loginNode: {host: 127.0.0.1, port: $(free_port), user: alice, password: x}"
out=$(nnictl create --config "$WORK/exp2/config.yml" --port "$(free_port)" 2>&1) && fail "a dead loginNode accepted: $out"
echo "$out" | grep -q "login node alice@127.0.0.1:.*unreachable" || fail "no clear message for a dead loginNode: $out"
[ "$(sql "SELECT count(*) FROM experiment")" = 1 ] || fail "an experiment was created with a dead loginNode"
pass "a loginNode that does not answer is refused at create: $(echo "$out" | head -1)"

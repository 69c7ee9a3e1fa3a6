#!/usr/bin/env bash
# The real Slurm cluster of lib/slurm.sh (Debian's Slurm 22.05: slurmctld, three slurmd
# nodes of 1 CPU and 2 fake GPUs each, munge), and the facts of Slurm the slurm platform
# relies on (workers/slurm/slurm_cmd.c parses and maps what is asserted here):
#   - a batch job keeps its --job-name and --comment; its output lands where -o says
#   - `squeue -t all --json` lists every job of the cluster with job_id, name, comment,
#     job_state, state_reason, exit_code (the raw wait status: exit 3 is 768), start_time,
#     end_time, restart_cnt, requeue; finished jobs stay listed (MinJobAge). It ignores -j
#     and -n in 22.05: the platform gets all jobs in one call and picks its own by name
#   - jobs beyond capacity are PENDING with reason Resources (the first) or Priority
#   - `scancel --signal=INT JOB` does not reach a batch script; `scancel --full
#     --signal=INT` does (its trap runs: exit 130 -> FAILED, exit_code 33280)
#   - scancel of a pending or running job: CANCELLED
#   - --gres=gpu:N gives CUDA_VISIBLE_DEVICES with N indices; more than a node has is
#     refused at sbatch
#   - a node set DOWN under a job requeues it: PENDING, reason BeginTime, restart_cnt 1
#     (NODE_FAIL in the job completion log); with --no-requeue the job ends NODE_FAIL
#   - --time=1 ends a job TIMEOUT (within 60-90 s)
# With SLURM_RECORD=DIR the squeue outputs are written there (tests/fixtures/slurm/ was
# recorded so for tests/unit/test_workers_slurm_cmd.c).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/slurm.sh"

t0=$(date +%s%N)
slurm_cluster_start
echo "cluster $SLURM_CLUSTER up in $((($(date +%s%N) - t0) / 1000000)) ms: $(sinfo -h -o '%D nodes %t')"
[ "$(sinfo -h -N -t idle -o %N | sort -u | tr '\n' ' ')" = "n1 n2 n3 " ] || { sinfo -N; fail "nodes n1-n3 are not idle"; }

S="$WORK/shared"
mkdir -p "$S"
cd "$S"

# squeue_py FILTER_PY: `squeue -t all --json`, each job as one line "id name state reason
# exit restarts requeue comment" where the Python expression FILTER_PY (job j) holds
squeue_lines() {
    squeue -t all --json | $PY -c '
import json, sys
for j in json.load(sys.stdin)["jobs"]:
    print(j["job_id"], j["name"], j["job_state"], j["state_reason"], j["exit_code"],
          j["restart_cnt"], str(j["requeue"]).lower(), j["comment"] or "-")'
}
line_of() { squeue_lines | awk -v id="$1" '$1 == id'; }
record() { [ -z "${SLURM_RECORD:-}" ] || { mkdir -p "$SLURM_RECORD"; squeue -t all --json > "$SLURM_RECORD/$1.json"; }; }
sb() { sbatch --parsable "$@" | cut -d';' -f1; }

# 1. a job with the platform's name and comment runs; its output lands in the shared dir
mkdir -p "$S/trials/t1"
a=$(sb --job-name=nni-e1-t1 --comment=trialq:e1:t1:1 -o "$S/trials/t1/trial.stdout" \
    -e "$S/trials/t1/trial.stderr" --wrap 'echo "ran on $SLURMD_NODENAME"; echo warn >&2; echo 0.5 > result')
b=$(sb --job-name=nni-e1-t2 --comment=trialq:e1:t2:1 -o "$S/b.out" --wrap 'exit 3')
# jobs of another experiment, and one of someone else with a name alike: the platform's
# parser must skip them (tests/fixtures/slurm/)
o1=$(sb --job-name=nni-e2-t1 --comment=trialq:e2:t1:1 -o /dev/null --wrap true)
o2=$(sb --job-name=nni-e1-t9 --comment="not trialq's" -o /dev/null --wrap true)
slurm_wait_state "$a" COMPLETED 30
slurm_wait_state "$b" FAILED 30
grep -q '^ran on n[1-3]$' "$S/trials/t1/trial.stdout" || fail "job output not in the shared dir: $(cat "$S/trials/t1/trial.stdout")"
[ "$(cat "$S/trials/t1/trial.stderr")" = warn ] || fail "job stderr not where -e said"
[ "$(cat "$S/result")" = 0.5 ] || fail "the job did not run in the submit directory"
set -- $(line_of "$a")
[ "$2 $3 $4 $5 $6 $7" = "nni-e1-t1 COMPLETED None 0 0 true" ] || fail "job $a in squeue --json: $*"
[ "${*:8}" = "trialq:e1:t1:1" ] || fail "comment of $a: ${*:8}"
slurm_wait_state "$o1" COMPLETED 30
slurm_wait_state "$o2" COMPLETED 30
set -- $(line_of "$b")
[ "$3 $4 $5" = "FAILED NonZeroExitCode 768" ] || fail "exit 3: $* (want FAILED NonZeroExitCode 768: the raw wait status)"
st=$(slurm_job_field "$a" start_time)
en=$(slurm_job_field "$a" end_time)
[ "$st" -gt 1600000000 ] && [ "$en" -ge "$st" ] || fail "start/end time of $a: $st $en"
pass "a named, commented job COMPLETED (exit_code 0), one exiting 3 FAILED (exit_code 768); output in the shared dir"

# squeue --json ignores -j and -n (22.05): every job comes back
[ "$(squeue -t all --json -j "$a" | $PY -c 'import json,sys; print(len(json.load(sys.stdin)["jobs"]))')" = 4 ] ||
    fail "squeue --json -j filtered (the platform assumes it does not)"
pass "squeue --json ignores -j: the platform takes all jobs in one call and filters by name"

# 2. a time limit of 1 minute: TIMEOUT (it holds one CPU meanwhile)
to=$(sb --job-name=nni-e1-timeout --time=1 -o /dev/null --wrap 'sleep 300')
slurm_wait_state "$to" RUNNING 30

# 3. beyond capacity: the two free CPUs run two jobs, two more wait
r1=$(sb --job-name=nni-e1-r1 -o /dev/null --wrap 'sleep 300')
r2=$(sb --job-name=nni-e1-r2 --comment=trialq:e1:r2:2 -o "$S/r2.out" \
    --wrap 'trap "echo got INT; exit 130" INT; sleep 300 & wait')
p1=$(sb --job-name=nni-e1-p1 -o /dev/null --wrap 'sleep 300')
p2=$(sb --job-name=nni-e1-p2 --no-requeue -o /dev/null --wrap 'sleep 300')
slurm_wait_state "$r1" RUNNING 30
slurm_wait_state "$r2" RUNNING 30
slurm_wait_state "$p2" PENDING 10
for _ in $(seq 1 100); do
    reasons="$(line_of "$p1" | cut -d' ' -f4) $(line_of "$p2" | cut -d' ' -f4)"
    [ "$reasons" = "Resources Priority" ] && break
    sleep 0.1
done
[ "$reasons" = "Resources Priority" ] || { squeue -t all; fail "pending reasons: $reasons (want Resources Priority)"; }
[ "$(line_of "$p2" | cut -d' ' -f7)" = false ] || fail "--no-requeue not shown in requeue"
record queue
pass "beyond capacity: PENDING with reasons Resources and Priority"

# 4. a stop: SIGINT reaches the batch script only with --full
scancel --signal=INT "$r2"
sleep 2
[ "$(line_of "$r2" | cut -d' ' -f3)" = RUNNING ] && [ ! -s "$S/r2.out" ] ||
    fail "plain scancel --signal=INT reached the batch script: $(line_of "$r2"); $(cat "$S/r2.out")"
scancel --full --signal=INT "$r2"
slurm_wait_state "$r2" FAILED 30
[ "$(cat "$S/r2.out")" = "got INT" ] || fail "the trial's INT trap did not run: $(cat "$S/r2.out")"
[ "$(line_of "$r2" | cut -d' ' -f5)" = 33280 ] || fail "exit 130 after INT: $(line_of "$r2")"
pass "scancel --full --signal=INT reaches the batch script (plain --signal does not); exit 130 -> FAILED 33280"

# the freed CPU goes to p1; p2 waits; a pending and a running job cancelled: CANCELLED
slurm_wait_state "$p1" RUNNING 30
c1=$(sb --job-name=nni-e1-c1 -o /dev/null --wrap 'sleep 300')
slurm_wait_state "$c1" PENDING 10
scancel "$c1"
slurm_wait_state "$c1" CANCELLED 30
scancel "$r1"
slurm_wait_state "$r1" CANCELLED 30
pass "scancel: a pending and a running job end CANCELLED"

# 5. GPUs: the freed CPU runs a job with one GPU, then one with both
slurm_wait_state "$p2" RUNNING 30
scancel "$p1"
slurm_wait_state "$p1" CANCELLED 30
g1=$(sb --job-name=nni-e1-g1 --gres=gpu:1 -o "$S/g1.out" --wrap 'echo "cvd=$CUDA_VISIBLE_DEVICES"')
slurm_wait_state "$g1" COMPLETED 30
grep -qx 'cvd=[01]' "$S/g1.out" || fail "--gres=gpu:1: $(cat "$S/g1.out")"
g2=$(sb --job-name=nni-e1-g2 --gres=gpu:2 -o "$S/g2.out" --wrap 'echo "cvd=$CUDA_VISIBLE_DEVICES"')
slurm_wait_state "$g2" COMPLETED 30
grep -qx 'cvd=0,1' "$S/g2.out" || fail "--gres=gpu:2: $(cat "$S/g2.out")"
out=$(sbatch --gres=gpu:3 -o /dev/null --wrap true 2>&1) && fail "--gres=gpu:3 on nodes of 2 GPUs was accepted: $out"
echo "$out" | grep -q "Requested node configuration is not available" || fail "gpu:3 refused with: $out"
pass "--gres=gpu:1 -> CUDA_VISIBLE_DEVICES=$(cut -d= -f2 "$S/g1.out"), gpu:2 -> 0,1, gpu:3 refused at sbatch"

# 6. a node set DOWN under jobs: a requeueable job goes back to PENDING (restart_cnt 1),
# a --no-requeue one ends NODE_FAIL
q1=$(sb --job-name=nni-e1-q1 -o /dev/null --wrap 'sleep 300')
slurm_wait_state "$q1" RUNNING 30
nq=$(squeue -h -j "$q1" -o %N)
np=$(squeue -h -j "$p2" -o %N)
for n in $(echo "$nq $np" | tr ' ' '\n' | sort -u); do
    scontrol update nodename="$n" state=down reason=tq-test
done
slurm_wait_state "$p2" NODE_FAIL 30
slurm_wait_state "$q1" PENDING 30
for _ in $(seq 1 100); do # the reason comes with the scheduler's next pass
    [ "$(line_of "$q1" | cut -d' ' -f4)" = BeginTime ] && break
    sleep 0.1
done
set -- $(line_of "$q1")
[ "$4 $6" = "BeginTime 1" ] || fail "requeued job: $* (want reason BeginTime, restart_cnt 1)"
record requeued
grep -q "JobId=$q1 .*JobState=NODE_FAIL" "$SLURM_DIR/jobcomp.log" || fail "no NODE_FAIL of $q1 in the completion log"
pass "node DOWN: the job was requeued (PENDING BeginTime, restart_cnt 1), the --no-requeue one ended NODE_FAIL"
for n in $(echo "$nq $np" | tr ' ' '\n' | sort -u); do
    scontrol update nodename="$n" state=resume
done
scontrol update jobid="$q1" StartTime=now
slurm_wait_state "$q1" RUNNING 30
[ "$(line_of "$q1" | cut -d' ' -f6)" = 1 ] || fail "restart_cnt after the rerun: $(line_of "$q1")"
pass "the requeued job runs again once eligible"

# 7. the time limit
slurm_wait_state "$to" TIMEOUT 150
set -- $(line_of "$to")
[ "$4" = TimeLimit ] || fail "TIMEOUT reason: $*"
record states
pass "--time=1: TIMEOUT (reason $4)"

d=$SLURM_DIR
slurm_cluster_stop
left=$(SLURM_DIR=$d slurm_job_pids)
[ -z "$left" ] || fail "job processes left after the cluster stopped: $left"
echo "90-slurm-cluster: the facts the slurm platform relies on hold"

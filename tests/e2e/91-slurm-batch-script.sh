#!/usr/bin/env bash
# The slurm platform's sbatch command line and batch script (workers/slurm/slurm_cmd.c, through
# tests/servers/slurm_cmd_cli) on the real cluster of lib/slurm.sh, and squeue's answer
# read back as the platform will: sbatch takes the command line; the job runs setupScript
# and the trial command in the code dir with NNI's variables, its output in the trial dir
# on the shared dir, and records its end in .nni/slurm_exit; GPUs; a stop (scancel --full
# --signal=INT) reaches the command and is recorded as one; jobs beyond capacity wait with
# Slurm's reason; the time limit comes from maxTrialDuration.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/slurm.sh"
: "${SLURM_CMD_CLI:?set SLURM_CMD_CLI to tests/servers/slurm_cmd_cli (ctest does)}"
slurm_cluster_start

S="$WORK/shared"
mkdir -p "$S/code"
EXP=ab12cd34
seq=0

# submit TRIAL ATTEMPT TS_JSON COMMAND [MAX_TRIAL_SECONDS]: the platform's sbatch; prints the job id
submit() {
    local argv
    seq=$((seq + 1))
    "$SLURM_CMD_CLI" submit "$EXP" "$1" "$2" "$seq" "$S/trials/$1" "$S/code" "${5:-0}" "$3" "$4" > "$WORK/argv.$1" ||
        fail "slurm_cmd_cli submit $1 failed"
    mapfile -t argv < "$WORK/argv.$1"
    [ "${#argv[@]}" -gt 3 ] || fail "slurm_cmd_cli gave no command line for $1"
    [ "${argv[0]}" = sbatch ] || fail "not an sbatch command line: ${argv[*]}"
    "${argv[@]}" || fail "sbatch refused the platform's command line: ${argv[*]}"
}
status() {
    squeue -t all --json > "$WORK/squeue.json" || fail "squeue --json failed"
    "$SLURM_CMD_CLI" status "$EXP" < "$WORK/squeue.json" > "$WORK/status.txt" || fail "slurm_cmd_cli status failed"
    cat "$WORK/status.txt"
}
status_of() { status | awk -v t="$1" '$1 == t'; }
exit_record() { cat "$S/trials/$1/.nni/slurm_exit" 2>/dev/null; }

# someone else's job with a name alike, to be left out of the status
sbatch --parsable --job-name="nni-$EXP-x1" --comment=mine -o /dev/null --wrap true > /dev/null

# 1. NNI's variables, setupScript in the job's shell, the code dir, the trial's output
# (the submitter's environment reaches the job too, sbatch's --export=ALL: NNI_HOME here)
j1=$(submit t1 1 '{"trialGpuNumber": 0, "cpusPerTrial": 1, "setupScript": "echo setting up\nexport TQ_SETUP=done"}' \
    'env | grep -E "^(NNI_|MULTI_PHASE|CUDA_VISIBLE_DEVICES|TQ_SETUP)" | grep -v ^NNI_HOME= | sort > "$NNI_OUTPUT_DIR/env.txt"; pwd > "$NNI_OUTPUT_DIR/pwd.txt"; echo "it'"'"'s done"')
# 2. two GPUs
j2=$(submit t2 1 '{"gpusPerTrial": 2}' 'echo "gpus=$CUDA_VISIBLE_DEVICES"')
# 3. a failing trial, 4. a failing setupScript (attempt 2)
j3=$(submit t3 1 '{}' 'echo bad >&2; exit 3')
j4=$(submit t4 2 '{"setupScript": "false"}' 'touch "$NNI_OUTPUT_DIR/ran"')
for j in "$j1" "$j2"; do slurm_wait_state "$j" COMPLETED 60; done
for j in "$j3" "$j4"; do slurm_wait_state "$j" FAILED 60; done

T1="$S/trials/t1"
want="CUDA_VISIBLE_DEVICES=
MULTI_PHASE=false
NNI_CODE_DIR=$S/code
NNI_EXP_ID=$EXP
NNI_OUTPUT_DIR=$T1
NNI_PLATFORM=slurm
NNI_SYS_DIR=$T1
NNI_TRIAL_JOB_ID=t1
NNI_TRIAL_SEQ_ID=1
TQ_SETUP=done"
[ "$(cat "$T1/env.txt")" = "$want" ] || { diff <(echo "$want") "$T1/env.txt"; fail "the trial's environment"; }
[ "$(cat "$T1/pwd.txt")" = "$S/code" ] || fail "the trial ran in $(cat "$T1/pwd.txt"), not the code dir"
[ "$(cat "$T1/trial.stdout")" = "setting up
it's done" ] || fail "trial.stdout: $(cat "$T1/trial.stdout")"
[ -f "$T1/slurm.stdout" ] && [ -f "$T1/slurm.stderr" ] || fail "Slurm's own output is not in the trial dir"
[ "$(exit_record t1)" = "0 0 1" ] || fail "exit record of t1: $(exit_record t1)"
[ "$(cat "$S/trials/t2/trial.stdout")" = "gpus=0,1" ] || fail "gpusPerTrial 2: $(cat "$S/trials/t2/trial.stdout")"
[ "$(cat "$S/trials/t3/trial.stderr")" = bad ] && [ "$(exit_record t3)" = "3 0 1" ] || fail "t3: $(exit_record t3)"
[ ! -e "$S/trials/t4/ran" ] || fail "the trial command ran after its setupScript failed"
grep -q "setupScript failed with status 1" "$S/trials/t4/trial.stderr" || fail "no word of the failed setupScript"
[ "$(exit_record t4)" = "1 0 2" ] || fail "t4: $(exit_record t4)"
pass "sbatch took the platform's command lines; NNI's variables, setupScript, code dir, output and exit records as planned"

# 5. a stop, as the platform sends it: scancel --full --signal=INT reaches the command,
# the script waits for its end and records it as stopped
j5=$(submit t5 1 '{}' 'trap "echo stopping; exit 42" INT; touch "$NNI_OUTPUT_DIR/started"; sleep 300 & wait')
for _ in $(seq 1 300); do [ -e "$S/trials/t5/started" ] && break; sleep 0.1; done
[ -e "$S/trials/t5/started" ] || fail "t5 did not start"
scancel --full --signal=INT "$j5"
slurm_wait_state "$j5" FAILED 30
[ "$(exit_record t5)" = "42 1 1" ] || fail "t5 after the stop: $(exit_record t5)"
[ "$(cat "$S/trials/t5/trial.stdout")" = stopping ] || fail "t5's INT trap did not run"
pass "a stop reached the trial's command; its end is recorded as stopped (42 1 1)"

# 6. beyond capacity (3 CPUs): the fourth waits with Slurm's reason; the time limit of
# maxTrialDuration 60 s is 2 minutes
for t in w1 w2 w3 w4; do
    eval "j_$t=\$(submit $t 1 '{}' 'sleep 300' 60)"
done
for t in w1 w2 w3; do slurm_wait_state "$(eval echo "\$j_$t")" RUNNING 30; done
slurm_wait_state "$j_w4" PENDING 10
[ "$(slurm_job_field "$j_w1" time_limit)" = 2 ] || fail "time limit of maxTrialDuration 60 s: $(slurm_job_field "$j_w1" time_limit) minutes"
for _ in $(seq 1 50); do
    [ "$(status_of w4 | cut -d' ' -f5)" = WAITING ] && status_of w4 | grep -q "Slurm: Resources" && break
    sleep 0.1
done
status_of w4 | grep -q " PENDING WAITING -1 Slurm: Resources (waiting for free resources)$" ||
    fail "w4: $(status_of w4)"
pass "the fourth job waits: $(status_of w4 | cut -d' ' -f7-)"
scancel "$j_w1" "$j_w4"
slurm_wait_state "$j_w4" CANCELLED 30
slurm_wait_state "$j_w1" CANCELLED 30

# 7. the whole status in one squeue call, as the platform reads it
status > /dev/null # in this shell: a failure ends the test
got=$(cut -d' ' -f1,2,4-6 "$WORK/status.txt" | sort)
want="t1 1 COMPLETED SUCCEEDED 0
t2 1 COMPLETED SUCCEEDED 0
t3 1 FAILED FAILED 3
t4 2 FAILED FAILED 1
t5 1 FAILED FAILED 42
w1 1 CANCELLED CANCELED 143
w2 1 RUNNING RUNNING -1
w3 1 RUNNING RUNNING -1
w4 1 CANCELLED CANCELED 0"
[ "$got" = "$want" ] || { diff <(echo "$want") <(echo "$got"); fail "the experiment's status from squeue --json"; }
pass "one squeue --json call: every job of the experiment, its state and outcome (not someone else's nni-$EXP-x1)"

# 8. what sbatch could not take is refused before it is called
out=$("$SLURM_CMD_CLI" submit "$EXP" b1 1 1 "$S/trials/b1" "$S/code" 0 '{"sbatchArgs": ["exclusive"]}' true 2>&1) &&
    fail "sbatchArgs [exclusive] accepted"
echo "$out" | grep -q "trainingService.sbatchArgs" || fail "bad sbatchArgs: $out"

d=$SLURM_DIR
slurm_cluster_stop
left=$(SLURM_DIR=$d slurm_job_pids)
[ -z "$left" ] || fail "processes of the cluster left after it stopped: $left"
echo "91-slurm-batch-script: the platform's sbatch command line and script work on a real Slurm"

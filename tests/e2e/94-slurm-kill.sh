#!/usr/bin/env bash
# Slurm stops: `nnictl trial kill` of a running trial reaches its command as SIGINT
# (scancel --full --signal=INT) and ends it USER_CANCELED; of a trial whose job waits in
# Slurm, USER_CANCELED too; a job cancelled from outside (scancel) ends its trial FAILED,
# as NNI ends a trial killed by someone else; `nnictl stop` cancels every job of the
# experiment, also one the database never recorded (found by name).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/slurm.sh"
slurm_cluster_start
export TRIALQ_SLURM_POLL_MS=300

mkdir -p "$WORK/exp"
cat > "$WORK/exp/trial.sh" <<'SH'
trap 'echo INT > "$NNI_OUTPUT_DIR/got_int"; exit 130' INT
touch "$NNI_OUTPUT_DIR/started"
sleep 300 & wait
SH
write_config "$WORK/exp/config.yml" trialConcurrency=5 maxTrialNumber=5 trainingService=$'\n  platform: slurm'
port=$(free_port)
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
in_state() { sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='$1' ORDER BY sequence"; }
wait_until 60 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" 3 || fail "not 3 RUNNING"
wait_until 30 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='WAITING' AND waiting_reason LIKE 'Slurm: %'" 2 ||
    fail "not 2 trials waiting in Slurm"
read -r r1 r2 _ <<< "$(in_state RUNNING | tr '\n' ' ')"
p1=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='WAITING' ORDER BY sequence LIMIT 1")
for t in "$r1" "$r2"; do wait_file "$NNI_HOME/$id/trials/$t/started" 30 "trial $t did not start"; done

# someone's job that looks like one of ours (the database never recorded it)
ghost=$(sbatch --parsable --job-name="nni-$id-ghost0" --comment="trialq:$id:ghost0:1" -o /dev/null --wrap 'sleep 300')

nnictl trial kill "$id" --trial_id "$r1" > /dev/null
nnictl trial kill "$id" --trial_id "$p1" > /dev/null
scancel "$(sql "SELECT job_id FROM trial WHERE id='$r2'")"
st() { sql "SELECT status || ' ' || coalesce(message, '') FROM trial WHERE id='$1'"; }
wait_until 30 sql_is "SELECT count(*) FROM trial WHERE id IN ('$r1','$r2','$p1') AND status IN $(printf "('%s')" "$(echo SUCCEEDED FAILED USER_CANCELED SYS_CANCELED EARLY_STOPPED | sed "s/ /','/g")")" 3 ||
    fail "the three trials did not end: $(st "$r1") / $(st "$r2") / $(st "$p1")"
[[ "$(st "$r1")" == USER_CANCELED* ]] || fail "killed running trial: $(st "$r1")"
[ -e "$NNI_HOME/$id/trials/$r1/got_int" ] || fail "the trial command did not get SIGINT"
[[ "$(st "$p1")" == USER_CANCELED* ]] || fail "killed waiting trial: $(st "$p1")"
[[ "$(st "$r2")" == "FAILED cancelled in Slurm (scancel)"* ]] || fail "trial cancelled from outside: $(st "$r2")"
[ "$(squeue -h -t all -j "$(sql "SELECT job_id FROM trial WHERE id='$p1'")" -o %T)" = CANCELLED ] ||
    fail "the waiting trial's job was not cancelled"
pass "kill: running -> SIGINT, USER_CANCELED; waiting -> USER_CANCELED; scancel from outside -> $(st "$r2")"

nnictl stop "$id" > /dev/null
# scancel is asynchronous: a cancelled job may be COMPLETING a moment
live() { squeue -h -t PENDING,RUNNING,CONFIGURING,COMPLETING -o '%i %j %T' | grep " nni-$id-" || true; }
no_live() { [ -z "$(live)" ]; }
wait_until 20 no_live || fail "jobs of the experiment left after stop: $(live)"
[ "$(squeue -h -t all -j "$ghost" -o %T)" = CANCELLED ] || fail "the unrecorded job was not cancelled"
pass "nnictl stop cancelled every job of the experiment, the unrecorded one too"
echo "94-slurm-kill: passed"

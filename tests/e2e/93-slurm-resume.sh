#!/usr/bin/env bash
# Slurm crash safety: the api and the slurm worker are killed with SIGKILL while jobs run
# and wait in Slurm; `nnictl resume` re-attaches to the jobs by name. Every trial ran
# exactly once: one Slurm job per trial (squeue lists no name twice), every trial
# SUCCEEDED in its first attempt, and the metric rows are exactly what the trials wrote.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/slurm.sh"
slurm_cluster_start
export TRIALQ_SLURM_POLL_MS=300 TRIAL_STEPS=3 TRIAL_SLEEP=0.5

port=$(free_port)
metrics_experiment "$WORK/exp" 5 12 7 "  platform: slurm"
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")

wait_until 60 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'" '>=3' ||
    fail "no 3 trials SUCCEEDED"
wait_until 30 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND lease_owner IS NOT NULL AND job_id IS NOT NULL" '>=4' ||
    fail "fewer than 4 jobs in flight"
kill9_manager "$id" slurm
sleep 2   # some jobs end, others start, while no manager watches

resume_to_done "$id" "$port" 12
slurm_one_job_each "$id" 12
pass "12 Slurm jobs, one per trial, re-attached after the crash; no metric lost or doubled"
nnictl stop "$id" > /dev/null
echo "93-slurm-resume: passed"

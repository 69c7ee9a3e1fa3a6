#!/usr/bin/env bash
# DLTS: `nnictl create` refuses what cannot work, saying which key, with nothing created
# and nothing submitted: a wrong password, an unknown cluster, a team the user is not in,
# a gpuType the cluster lacks, a missing mount, a plain http:// dashboard that is not
# 127.0.0.1, a missing password (NNI's DLTS_JOB_TOKEN fallback is taken when set). Then,
# while an experiment runs, the dashboard answers 503 for a while, then once each too
# slowly, 502, 429 and a dropped connection: the worker retries with back-off and
# loses nothing; a dashboard that keeps failing is the experiment's error (check-status)
# until it answers again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/dlts.sh"

dlts_start_server
port=$(free_port)

# refused <label> <expected text> <sed script on the config>: create fails saying so;
# nothing is created, nothing submitted, the password not shown
refused() {
    dlts_experiment "$WORK/bad" 2 4 3
    sed -i "$3" "$WORK/bad/config.yml"
    if nnictl create --config "$WORK/bad/config.yml" --port "$port" > "$WORK/bad.out" 2>&1; then
        cat "$WORK/bad.out"; fail "$1: create succeeded"
    fi
    grep -qF -- "$2" "$WORK/bad.out" || { cat "$WORK/bad.out"; fail "$1: the error does not say '$2'"; }
    ! grep -qF "$DLTS_PASSWORD" "$WORK/bad.out" || fail "$1: the error shows the password"
    [ "$(sql "SELECT count(*) FROM experiment" 2>/dev/null || echo 0)" = 0 ] || fail "$1: an experiment was created"
    [ "$(dlts_stat 's["created"]')" = 0 ] || fail "$1: a job was submitted"
    pass "$1: refused ($2)"
}
refused "wrong password" "refused the credentials of $DLTS_EMAIL (HTTP 403: Invalid token)" \
    "s/^  password: .*/  password: 0123456789abcdef0123456789abcdef/"
refused "unknown cluster" "has no cluster 'c9' (HTTP 404: Cluster is not found)" "s/^  cluster: .*/  cluster: c9/"
refused "not in the team" "user $DLTS_EMAIL is in no team 'other' of cluster 'c1' (HTTP 404: Team is not found)" \
    "s/^  team: .*/  team: other/"
refused "wrong gpuType" "cluster 'c1' has no GPU type 'K80' (it has P100)" "s/^  image: /  gpuType: K80\n  image: /"
refused "missing mount" "localStorageMountPoint" "s|^  localStorageMountPoint: .*|  localStorageMountPoint: $WORK/nowhere|"
refused "plain http" "plain http:// sends the password unencrypted" "s|^  dashboard: http://127.0.0.1|  dashboard: http://localhost|"
refused "no password" "password: required for dlts (or set DLTS_JOB_TOKEN)" "/^  password: /d"
[ "$(dlts_stat 's["refused"].get("403 Invalid token", 0)')" -ge 1 ] || fail "the wrong password was never tried"

# NNI's fallbacks: email, password and team from a DLTS job's environment
dlts_experiment "$WORK/envexp" 2 2 3
sed -i -e '/^  password: /d' -e '/^  email: /d' -e '/^  team: /d' "$WORK/envexp/config.yml"
DLWS_USER_EMAIL=$DLTS_EMAIL DLTS_JOB_TOKEN=$DLTS_PASSWORD DLWS_VC_NAME=$DLTS_TEAM \
    nnictl create --config "$WORK/envexp/config.yml" --port "$port" > "$WORK/env.out" 2>&1 ||
    { cat "$WORK/env.out"; fail "create with DLWS_USER_EMAIL, DLTS_JOB_TOKEN, DLWS_VC_NAME failed"; }
id=$(exp_id_of "$WORK/env.out")
wait_status "$id" DONE 120
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 2 ] || fail "env experiment"
nnictl stop "$id" > /dev/null
pass "email, password and team taken from DLWS_USER_EMAIL, DLTS_JOB_TOKEN, DLWS_VC_NAME"

# a dashboard that fails for a while
export TRIAL_STEPS=3 TRIAL_SLEEP=0.5   # the experiment outlasts the fault phases
dlts_stop_server
dlts_start_server
port=$(free_port)
dlts_experiment "$WORK/exp" 4 12 9
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create failed"; }
id=$(exp_id_of "$WORK/create.out")
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" '>=2' 30 "2 trials RUNNING"
# every phase waits until the server says its fault met the requests it names
# (fault_phase); the 503s last until check-status has shown them
check() { curl -sf "http://127.0.0.1:$port/api/v1/nni/check-status"; }
fault_phase dlts '{"mode": "status", "status": 503}' 1
wait_until 20 eval "check | grep -q 'DLTS dashboard'" || { check; fail "check-status does not show the failing dashboard"; }
check > "$WORK/status.json"
FAULT_SERVED=$(fault_served dlts)
grep -q "HTTP 503" "$WORK/status.json" || { cat "$WORK/status.json"; fail "check-status does not give the answer"; }
! grep -qF "$DLTS_PASSWORD" "$WORK/status.json" || fail "check-status shows the password"
pass "a dashboard answering 503 ($FAULT_SERVED times so far) is the experiment's error: $(grep -o 'DLTS dashboard[^"]*' "$WORK/status.json" | head -c 160)"
# (the worker polls by one job list a second and backs off after a failed one, so one
# fault each is met within seconds; the trials cannot end meanwhile: no job is polled)
fault_phase dlts '{"mode": "delay", "delay": 3, "count": 1}' 1   # answers after 3 s: the worker gives up after 2 s
fault_phase dlts '{"mode": "status", "status": 502, "count": 1}' 1
fault_phase dlts '{"mode": "status", "status": 429, "count": 1}' 1
fault_phase dlts '{"mode": "drop", "count": 1}' 1
wait_status "$id" DONE 180
pass "experiment reached DONE through 503s, timeouts, 502s, 429s and dropped connections"
wait_until 10 eval "! curl -sf 'http://127.0.0.1:$port/api/v1/nni/check-status' | grep -q 'DLTS dashboard'" ||
    fail "the dashboard's error stays after it answers again"
pass "the error is gone once the dashboard answers"

injected=$(dlts_stat 's["injected"]')
ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND attempt=1")
[ "$ok" = 12 ] || { sql "SELECT id, status, attempt, message FROM trial WHERE experiment_id='$id'"; fail "$ok of 12 SUCCEEDED in attempt 1"; }
[ "$(dlts_stat 's["created"]')" = 12 ] || fail "$(dlts_stat 's["created"]') jobs created for 12 trials"
grep -qs "retrying in" "$NNI_HOME/$id"/log/*.log || fail "no retry logged"
assert_dir_metrics "$id"
pass "$injected failed answers; 12 trials each ran once; metrics complete"

nnictl stop "$id" > /dev/null
assert_no_leftovers
echo "86c-dlts-faults: passed"

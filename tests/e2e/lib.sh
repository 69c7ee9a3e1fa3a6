# lib.sh: shared setup for the end-to-end tests. Each test runs the real binary
# against its own home (database + experiment dirs) in a temporary directory.
set -euo pipefail

: "${TRIALQ_BIN:?set TRIALQ_BIN to the trialq binary (ctest does)}"
: "${TRIALQ_SRC:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
TEST_NAME=$(basename "$0" .sh)
WORK=$(mktemp -d "/tmp/trialq-e2e-$TEST_NAME-XXXXXX")
export NNI_HOME="$WORK/home"
BIN_DIR="$WORK/bin"
mkdir -p "$BIN_DIR" "$NNI_HOME"
ln -s "$TRIALQ_BIN" "$BIN_DIR/nnictl"
ln -s "$TRIALQ_BIN" "$BIN_DIR/trialq"
export PATH="$BIN_DIR:$PATH"
DB="$NNI_HOME/trialq.db"
PY=/usr/bin/python3

cleanup() {
    local rc=$?
    nnictl stop --all >/dev/null 2>&1 || true
    [ -z "${COPIES_PID:-}" ] || kill "$COPIES_PID" 2>/dev/null || true
    # a sanitizer report in any process's log fails the test (ASan/UBSan builds)
    if grep -rlsE "AddressSanitizer|LeakSanitizer|runtime error:" "$NNI_HOME" "$WORK"/*.out 2>/dev/null; then
        echo "sanitizer reports found (files above)" >&2
        grep -rshE -A30 "AddressSanitizer|LeakSanitizer|runtime error:" "$NNI_HOME" 2>/dev/null | head -60 >&2
        [ "$rc" -ne 0 ] || rc=1
    fi
    if [ "$rc" -ne 0 ]; then
        echo "--- $TEST_NAME failed (rc=$rc); logs:" >&2
        for f in "$NNI_HOME"/*/log/*.log; do
            [ -f "$f" ] && { echo "== $f" >&2; tail -n 40 "$f" >&2; }
        done
    fi
    if [ -z "${KEEP:-}" ]; then rm -rf "$WORK"; else echo "kept $WORK" >&2; fi
    exit "$rc"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

free_port() {
    $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# the test reads the live database beside the api and workers: wait for locks as they do
sql() { sqlite3 -batch -noheader -cmd ".timeout 10000" "$DB" "$@"; }

# ---- waiting. Every wait polls every WAIT_STEP seconds (0.1; `WAIT_STEP=0.05 wait_...`
# polls faster) at most SECONDS / WAIT_STEP times (decimal SECONDS allowed), then looks
# once more. The wait_* helpers fail the test naming what they waited for; wait_until
# only returns 1, and the test asserts it: `|| fail "<what did not happen>"`. A wait is a
# precondition of what follows, never `|| true`: a scenario that did not happen fails.

# wait_until SECONDS CMD [ARG...]: until CMD succeeds; 1 when it did not within SECONDS
wait_until() {
    local secs=$1 n i
    shift
    n=$(awk -v s="$secs" -v d="${WAIT_STEP:-0.1}" 'BEGIN { n = s / d; if (n > int(n)) n = int(n) + 1; print int(n) }')
    for ((i = 0; i < n; i++)); do
        if "$@"; then return 0; fi
        sleep "${WAIT_STEP:-0.1}"
    done
    "$@"
}

# jobserver_start NAME WHAT ARGS...: runs a test server (ARGS: its command line, which
# must name --port-file "$WORK/NAME.port") in the background, its output appended to
# $WORK/NAME_server.out, and waits for its port; sets JOBSERVER_PID and JOBSERVER_PORT.
# WHAT names it in the failure ("the WHAT test server did not start").
jobserver_start() {
    local name=$1 what=$2
    shift 2
    rm -f "$WORK/$name.port"
    ( exec "$@" >> "$WORK/${name}_server.out" 2>&1 ) &
    JOBSERVER_PID=$!
    wait_until 10 test -s "$WORK/$name.port" ||
        { cat "$WORK/${name}_server.out" >&2; fail "the $what test server did not start"; }
    JOBSERVER_PORT=$(cat "$WORK/$name.port")
}

# jobserver_stop PID: ends a server jobserver_start started (nothing when PID is empty)
jobserver_stop() {
    [ -n "${1:-}" ] || return 0
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# sql_is SQL EXPECTED: the query (on the test's database, see sql) prints EXPECTED:
# a value exactly, or a comparison '>=N', '>N', '<=N', '<N' (numbers), '!=V' (anything
# but V; '!=' = not empty); the output is left in SQL_GOT
sql_is() {
    SQL_GOT=$(sql "$1") || return 1
    case $2 in
    '>='*) [[ $SQL_GOT =~ ^-?[0-9]+$ ]] && [ "$SQL_GOT" -ge "${2#>=}" ] ;;
    '<='*) [[ $SQL_GOT =~ ^-?[0-9]+$ ]] && [ "$SQL_GOT" -le "${2#<=}" ] ;;
    '>'*) [[ $SQL_GOT =~ ^-?[0-9]+$ ]] && [ "$SQL_GOT" -gt "${2#>}" ] ;;
    '<'*) [[ $SQL_GOT =~ ^-?[0-9]+$ ]] && [ "$SQL_GOT" -lt "${2#<}" ] ;;
    '!='*) [ "$SQL_GOT" != "${2#!=}" ] ;;
    *) [ "$SQL_GOT" = "$2" ] ;;
    esac
}

# wait_sql SQL EXPECTED [SECONDS [WHAT]]: until sql_is SQL EXPECTED (30 s by default);
# else fails with WHAT (default: the query), the last answer and the time waited
wait_sql() {
    SQL_GOT=
    wait_until "${3:-30}" sql_is "$1" "$2" ||
        fail "${4:-[$1]}: still '$SQL_GOT' after ${3:-30} s, wanted '$2'${4:+ [$1]}"
}

# wait_file [-s] FILE [SECONDS [WHAT]]: until FILE exists (-s: and is not empty), 10 s by
# default; else fails saying WHAT and the file
wait_file() {
    local t=-e
    [ "$1" != -s ] || { t=-s; shift; }
    wait_until "${2:-10}" test "$t" "$1" ||
        fail "${3:+$3: }$1 did not appear$([ "$t" = -e ] || echo ' (not empty)') within ${2:-10} s"
}

# not CMD [ARG...]: CMD fails (for wait_until: `wait_until 5 not port_is_free "$port"`)
not() { ! "$@"; }

# fault_served PFX: how many requests met the fault last given to the test server of the
# platform helpers PFX (pai, dlc, dlts, aml, k8s: PFX_stats, PFX_fail), its "fault_served"
fault_served() { "$1_stats" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["fault_served"])'; }
# served_ge PFX N: fault_served PFX is at least N (the count in $FAULT_SERVED)
served_ge() { FAULT_SERVED=$(fault_served "$1") && [ "$FAULT_SERVED" -ge "$2" ]; }
# fault_phase PFX JSON N [SECS]: PFX_fail JSON, then waits (20 s) until N requests met
# that fault by the server's count, else the test fails naming it: a phase that the
# worker never met cannot pass unnoticed (each fault set replaces the one before)
fault_phase() {
    FAULT_SERVED=0
    "$1_fail" "$2" || fail "fault $2: the test server did not take it"
    wait_until "${4:-20}" served_ge "$1" "$3" || fail "fault $2: met by $FAULT_SERVED of $3 requests in ${4:-20} s"
}

# gone PID: no process PID (kill -0 fails; a zombie still counts as there)
gone() { ! kill -0 "$1" 2>/dev/null; }
# wait_gone PID [SECONDS [WHAT]]: until gone PID, 10 s by default; else fails saying WHAT
wait_gone() {
    wait_until "${2:-10}" gone "$1" || fail "${3:+$3: }process $1 still runs after ${2:-10} s"
}
# dead PID: gone, or a zombie (a process killed whose reparented exit an init has not
# reaped yet: the CLI's liveness check, proc_alive, counts it as ended too);
# wait_dead PID [SECONDS [WHAT]]: until dead PID, 10 s by default; else fails saying WHAT
dead() { gone "$1" || ps -o stat= -p "$1" 2>/dev/null | grep -q '^Z'; }
wait_dead() {
    wait_until "${2:-10}" dead "$1" || fail "${3:+$3: }process $1 still runs after ${2:-10} s"
}

# http_ok URL [REGEX]: curl -sf URL succeeds (and its body matches the grep -E REGEX)
http_ok() {
    local body
    body=$(curl -sf "$1") || return 1
    [ -z "${2:-}" ] || grep -qE -- "$2" <<< "$body"
}
# wait_http URL [SECONDS [REGEX [WHAT]]]: until http_ok URL [REGEX], 10 s by default; else
# fails saying WHAT
wait_http() {
    wait_until "${2:-10}" http_ok "$1" "${3:-}" ||
        fail "${4:+$4: }$1 did not answer${3:+ a body matching '$3'} within ${2:-10} s"
}

# exp_id_of <nnictl create output file>
exp_id_of() { sed -n 's/.*Experiment ID: \([a-z0-9]*\).*/\1/p' "$1" | head -n1; }

# wait_status <id> <regex> <seconds>
status_is() { st=$(sql "SELECT status FROM experiment WHERE id='$1'"); [[ "$st" =~ ^($2)$ ]]; }
wait_status() {
    local st=""
    wait_until "$3" status_is "$1" "$2" || fail "experiment $1 is $st after ${3}s, wanted $2"
}

# no process of ours may survive: api, worker, supervisor or trial of this home
# (every one of them inherits this test's NNI_HOME in its environment; the test's own
# helper commands share the test's session and are not counted)
our_pids() {
    local p sid mysid
    mysid=$(ps -o sid= -p $$ | tr -d ' ')
    for p in /proc/[0-9]*; do
        grep -qsz -e "^NNI_HOME=$NNI_HOME\$" -e "^NNI_SYS_DIR=$NNI_HOME/" "$p/environ" 2>/dev/null || continue
        sid=$(ps -o sid= -p "${p#/proc/}" 2>/dev/null | tr -d ' ')
        [ -n "$sid" ] && [ "$sid" != "$mysid" ] && echo "${p#/proc/}"
    done
    return 0
}
assert_no_leftovers() {
    local left
    left=$(our_pids | tr '\n' ' ')
    [ -z "${left// /}" ] || { ps -o pid,ppid,pgid,stat,args -p "$(echo $left | tr ' ' ,)" >&2; fail "processes left behind: $left"; }
}

port_is_free() {
    $PY -c "import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1',$1))" 2>/dev/null
}
port_busy() { ! port_is_free "$1"; }

# write_config FILE [KEY=VALUE ...]: an experiment's YAML config, by default
#   searchSpace:
#     x: {_type: randint, _value: [0, 100000]}
#   trialCommand: sh trial.sh
#   trialCodeDirectory: .
#   trialConcurrency: 1
#   maxTrialNumber: 1
#   tuner: {name: Random, classArgs: {seed: 5}}
#   trainingService: {platform: local}
# each KEY=VALUE sets a top-level key (VALUE as written: a scalar or flow YAML on one
# line, or lines starting with a newline for a block), a new key goes before
# trainingService, an empty VALUE drops the key; searchSpaceFile drops searchSpace and
# advisor drops tuner
write_config() {
    local file=$1 kv key
    shift
    local -a keys=(searchSpace trialCommand trialCodeDirectory trialConcurrency maxTrialNumber tuner trainingService)
    local -A val=([searchSpace]=$'\n  x: {_type: randint, _value: [0, 100000]}' [trialCommand]='sh trial.sh'
        [trialCodeDirectory]=. [trialConcurrency]=1 [maxTrialNumber]=1
        [tuner]='{name: Random, classArgs: {seed: 5}}' [trainingService]='{platform: local}')
    for kv in "$@"; do
        key=${kv%%=*}
        [[ $kv == *=* && $key =~ ^[A-Za-z][A-Za-z0-9_]*$ ]] || fail "write_config: '$kv' is not KEY=VALUE"
        [[ -v "val[$key]" ]] || keys=("${keys[@]:0:${#keys[@]}-1}" "$key" trainingService)
        val[$key]=${kv#*=}
        case $key in searchSpaceFile) val[searchSpace]= ;; advisor) val[tuner]= ;; esac
    done
    for key in "${keys[@]}"; do
        case ${val[$key]} in
        '') ;;
        $'\n'*) printf '%s:%s\n' "$key" "${val[$key]}" ;;
        *) printf '%s: %s\n' "$key" "${val[$key]}" ;;
        esac
    done > "$file"
}

# tls_ca DIR: a throwaway CA (DIR/ca.pem) and a certificate of 127.0.0.1 it signed
# (DIR/srv.pem, its key DIR/srv.key), for a test server started with --tls-cert/--tls-key
tls_ca() {
    mkdir -p "$1"
    (cd "$1" && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 1 -subj "/CN=trialq test CA" &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key -out srv.csr -subj "/CN=127.0.0.1" &&
        printf 'subjectAltName=IP:127.0.0.1\n' > ext &&
        openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile ext -out srv.pem) \
        > "$1/openssl.out" 2>&1 || { cat "$1/openssl.out"; fail "openssl cannot make a CA"; }
}

# kill9_manager ID PLATFORM: SIGKILL to the experiment's api and its PLATFORM worker at once
kill9_manager() {
    local w a before
    w=$(pgrep -f "trialq worker --platform $2 --experiment $1" | head -n1 || true)
    a=$(sql "SELECT api_pid FROM experiment WHERE id='$1'")
    [ -n "$w" ] && [ -n "$a" ] || fail "no worker or api to kill"
    kill -9 "$w" "$a"
    wait_dead "$a" 5 "the api killed with -9"
    before=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$1' AND status IN ('RUNNING','WAITING') AND job_id IS NOT NULL")
    pass "api $a and worker $w killed with $before jobs in flight"
}

# resume_to_done ID PORT TOTAL: `nnictl resume` after a crash; the experiment reaches DONE
# with TOTAL trials, each SUCCEEDED in its first attempt and ended exactly once (its
# events), and a re-attach or adoption logged. RESUME_THEN: a command run right after
# the resume (e.g. to bring back what the workers need)
resume_to_done() {
    local total ok
    nnictl resume "$1" --port "$2" > "$WORK/resume.out" 2>&1 || { cat "$WORK/resume.out"; fail "resume failed"; }
    [ -z "${RESUME_THEN:-}" ] || $RESUME_THEN
    wait_status "$1" DONE 180
    pass "experiment reached DONE after resume"
    total=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$1'")
    ok=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$1' AND status='SUCCEEDED' AND attempt=1")
    [ "$total" = "$3" ] && [ "$ok" = "$3" ] ||
        { sql "SELECT id, status, attempt, message FROM trial WHERE experiment_id='$1'"; fail "$ok of $total SUCCEEDED in attempt 1"; }
    grep -qs "re-attached\|adopted" "$NNI_HOME/$1"/log/*.log || fail "no re-attach logged"
    assert_final_once "$1"
}

# metrics_experiment <dir> <concurrency> <max trials> <seed> [<trainingService block>]:
# a config for trials/metrics.sh (the block: indented YAML lines; default local)
metrics_experiment() {
    mkdir -p "$1"
    cp "$TRIALQ_SRC/tests/e2e/trials/metrics.sh" "$1/"
    write_config "$1/config.yml" trialCommand='sh metrics.sh' trialConcurrency="$2" maxTrialNumber="$3" \
        tuner="{name: Random, classArgs: {seed: $4}}" trainingService=$'\n'"${5:-  platform: local}"
}

# http_experiment DIR SEED [CONCURRENCY MAX [TS]]: an experiment on NNI's HTTP trial channel
# (trialCommandChannel: http; default 4 trials at once, 12 in all; TS the trainingService
# YAML indented 2, local by default; a cluster role runs `sh run.sh`), the even trials a
# stdlib client speaking it exactly as NNI 3's SDK does (trials/nni_http_client.py: a new
# connection per request, no retry), the odd ones the bundled SDK (trials/sdk_steps.py);
# each writes what was acknowledged to acked.log in its trial dir
http_experiment() {
    mkdir -p "$1"
    cp "$TRIALQ_SRC/tests/e2e/trials/nni_http_client.py" "$TRIALQ_SRC/tests/e2e/trials/sdk_steps.py" "$1/"
    cat > "$1/run.sh" <<'SH'
if [ $((NNI_TRIAL_SEQ_ID % 2)) = 0 ]; then exec /usr/bin/python3 nni_http_client.py; fi
exec /usr/bin/python3 sdk_steps.py
SH
    write_config "$1/config.yml" trialCommand='sh run.sh' trialConcurrency="${3:-4}" maxTrialNumber="${4:-12}" \
        trialCommandChannel=http tuner="{name: Random, classArgs: {seed: $2}}" trainingService=$'\n'"${5:-  platform: local}"
}

# http_wait_reporting ID LABEL SECONDS: waits until 4 trials of an http_experiment run and
# 4 metrics were acknowledged (acked_lines ID, defined by the test, counts them)
http_reporting() {
    [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$1' AND status='RUNNING'")" = 4 ] &&
        [ "$(acked_lines "$1")" -ge 4 ]
}
http_wait_reporting() { wait_until "$3" http_reporting "$1" || fail "$2: 4 trials do not run and report"; }

# assert_acked_match ID LABEL STEPS: every trial of an http_experiment stored exactly the
# metrics it was acknowledged (acked.log), STEPS intermediate results and a final one, and
# left no channel file behind
assert_acked_match() {
    local dir tid want got
    for dir in "$NNI_HOME/$1"/trials/*/; do
        tid=$(basename "$dir")
        want=$(sort "$dir/acked.log")
        got=$(sql "SELECT type || ' ' || sequence || ' ' || value FROM metric WHERE trial_id='$tid'" | sort)
        [ "$want" = "$got" ] || { echo "acknowledged: $want"; echo "stored: $got"; fail "$2: metrics of $tid differ"; }
        [ "$(grep -c '^PERIODICAL' "$dir/acked.log")" = "$3" ] && [ "$(grep -c '^FINAL' "$dir/acked.log")" = 1 ] ||
            fail "$2: $tid did not report $3 + 1 results"
        [ ! -e "$dir/.nni/channel" ] || fail "$2: $tid's channel file left after its end"
    done
}

# assert_metrics_match <exp id>: the metric rows of each trial are exactly the records
# trials/metrics.sh says it wrote (no loss, no duplicate)
assert_metrics_match() {
    local dir tid want got
    for dir in "$NNI_HOME/$1"/trials/*/; do
        tid=$(basename "$dir")
        case $tid in *.attempt*) continue ;; esac
        want=$(sort "$dir/written.log")
        got=$(sql "SELECT type || ' ' || sequence || ' ' || value FROM metric WHERE trial_id='$tid'" | sort)
        [ "$want" = "$got" ] || { echo "want: $want"; echo "got: $got"; fail "metrics of $tid differ"; }
    done
}

# assert_dir_metrics <exp>: for every SUCCEEDED trial of the experiment, on any platform,
# the metric rows of its current attempt are exactly what trials/metrics.sh wrote into its
# trial dir (trial.trial_dir: on the storage of a cluster platform): no loss, no duplicate
assert_dir_metrics() {
    local tid dir want got n=0
    for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$1' AND status='SUCCEEDED'"); do
        dir=$(sql "SELECT trial_dir FROM trial WHERE id='$tid'")
        [ -f "$dir/written.log" ] || fail "trial $tid: no $dir/written.log"
        want=$(sort "$dir/written.log")
        got=$(sql "SELECT type || ' ' || sequence || ' ' || value FROM metric WHERE trial_id='$tid'
                   AND attempt = (SELECT attempt FROM trial WHERE id='$tid')" | sort)
        [ "$want" = "$got" ] || { echo "want: $want"; echo "got: $got"; fail "metrics of $tid differ"; }
        n=$((n + 1))
    done
    [ "$n" -gt 0 ] || fail "no trial succeeded"
}

# webui_artifacts: sets ART, this test's screenshot folder, emptied:
# <ctest's working dir>/webui-artifacts/<test name> (WEBUI_ARTIFACTS overrides)
webui_artifacts() {
    ART=${WEBUI_ARTIFACTS:-$PWD/webui-artifacts/$TEST_NAME}
    rm -rf "$ART"
    mkdir -p "$ART"
    ART=$(cd "$ART" && pwd)
}

# webui_setup: what the browser tests need (Debian's chromium, node, playwright-core as
# pinned in tests/webui/package-lock.json, which downloads no browser); sets UI
webui_setup() {
    UI="$TRIALQ_SRC/tests/webui"
    command -v node > /dev/null || fail "node is not installed (scripts/install-deps.sh installs nodejs and npm)"
    [ -x "${CHROMIUM:-/usr/bin/chromium}" ] || fail "chromium is not installed (scripts/install-deps.sh installs it)"
    if [ ! -f "$UI/node_modules/playwright-core/package.json" ]; then
        (cd "$UI" && npm ci --no-audit --no-fund --loglevel=error) || fail "npm ci in tests/webui failed"
    fi
}

# copies_watch SCRIPT[,SCRIPT...]: samples the process table every 100 ms
# (lib/trial_copies.py) for live copies of each trial of the experiments added with copies_add ID; copies_check
# MIN_TRIALS stops it and fails when a trial ever had two copies alive at once, or fewer
# than MIN_TRIALS trials were seen running
copies_watch() {
    : > "$WORK/copies.ids"
    rm -f "$WORK/copies.out" "$WORK/copies.out.stop"
    $PY "$TRIALQ_SRC/tests/e2e/lib/trial_copies.py" "$1" "$WORK/copies.ids" "$WORK/copies.out" &
    COPIES_PID=$!
}
copies_add() { echo "$1" >> "$WORK/copies.ids"; }
copies_check() {
    touch "$WORK/copies.out.stop"
    wait "$COPIES_PID" || fail "the process sampler failed"
    local samples seen
    samples=$(sed -n 's/^samples //p' "$WORK/copies.out")
    seen=$(sed -n 's/^seen //p' "$WORK/copies.out")
    [ "$(wc -l < "$WORK/copies.out")" = 2 ] || { cat "$WORK/copies.out" >&2; fail "a trial had two live copies at once"; }
    [ "$seen" -ge "$1" ] || fail "the sampler saw only $seen trials running ($samples samples)"
    echo "sampled the process table $samples times: $seen trials, never two copies of one"
}

# kill_until_done ID LISTER SECONDS: until experiment ID is DONE, kill -9 every process
# `LISTER ID` prints (per-trial supervisors: each command line names .../trials/<trial>);
# sets KILLED_TRIALS to the number of trials whose supervisor was killed
kill_until_done() {
    local p t killed="" end=$((SECONDS + $3))
    while [ "$(sql "SELECT status FROM experiment WHERE id='$1'")" != DONE ] && [ "$SECONDS" -lt "$end" ]; do
        for p in $($2 "$1"); do
            t=$(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | sed -n 's|.*/trials/\([^ /]*\) .*|\1|p')
            kill -9 "$p" 2>/dev/null && killed="$killed $t"
        done
        sleep 0.2
    done
    KILLED_TRIALS=$(echo $killed | tr ' ' '\n' | sort -u | grep -c . || true)
}

# kill_api_at ID PORT N...: for each N, once N trials of experiment ID have SUCCEEDED,
# kill -9 its api, wait until it is gone and `nnictl resume` it on PORT
kill_api_at() {
    local id=$1 port=$2 at p
    shift 2
    for at in "$@"; do
        WAIT_STEP=0.05 wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'" ">=$at" 30 \
            "$at trials SUCCEEDED, to kill the api at"
        p=$(sql "SELECT api_pid FROM experiment WHERE id='$id'")
        kill -9 "$p"
        WAIT_STEP=0.05 wait_dead "$p" 5 "the api killed with -9"
        nnictl resume "$id" --port "$port" > /dev/null
    done
}

# crash_and_resume PLATFORM ID PORT N: a cluster platform's crash drill (82 OpenPAI, 86b
# DLTS, 88 DLC): its worker is killed with SIGKILL while 4 jobs run (the api restarts
# it), then, once 6 trials succeeded, the whole manager (kill9_manager) while jobs still
# run; after a pause (some jobs end while no manager watches) resume_to_done: DONE with
# the N trials each SUCCEEDED in its first attempt and ended once, a re-attach logged
crash_and_resume() {
    local platform=$1 id=$2 port=$3 n=$4 w
    _running() {
        wait_until 60 sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='RUNNING'" ">=$1" ||
            fail "fewer than $1 trials RUNNING"
    }
    _running 4
    w=$(pgrep -f "trialq worker --platform $platform --experiment $id" | head -n1 || true)
    [ -n "$w" ] || fail "no $platform worker"
    kill -9 "$w"
    pass "worker $w killed with 4 jobs running"
    wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'" '>=6' 60 \
        "6 trials SUCCEEDED after the worker was killed"
    _running 2
    kill9_manager "$id" "$platform"
    sleep 1.5
    resume_to_done "$id" "$port" "$n"
}

# assert_final_once ID: every trial of the experiment reached a final state exactly once
assert_final_once() {
    local multi
    multi=$(sql "SELECT count(*) FROM (SELECT trial_id FROM event WHERE experiment_id='$1' AND entity='trial'
                 AND to_state IN ('SUCCEEDED','FAILED','USER_CANCELED','SYS_CANCELED','EARLY_STOPPED')
                 GROUP BY trial_id HAVING count(*) != 1)")
    [ "$multi" = 0 ] || fail "$multi trials reached a final state more or less than once"
}

# disk_full_messages ID PORT: the three trials of a "fill" experiment (e2e/18b part 3 on
# the local platform, e2e/59b on the remote one): trials 0 and 2 met a full disk and say
# so, trial 1 only its exit code; all three FAILED in attempt 1; REST /trial-jobs and
# `nnictl trial ls` show the message. Sets FULL_T2 to trial 2's id.
DISK_FULL_MSG="exit code 1; the disk of its trial directory was full while it ran"
disk_full_messages() {
    local id=$1 port=$2 m0 m1 m2
    m0=$(sql "SELECT message FROM trial WHERE experiment_id='$id' AND sequence=0")
    m1=$(sql "SELECT message FROM trial WHERE experiment_id='$id' AND sequence=1")
    m2=$(sql "SELECT message FROM trial WHERE experiment_id='$id' AND sequence=2")
    [ "$m0" = "$DISK_FULL_MSG" ] || fail "trial 0 (filled its disk, then freed it): $m0"
    [ "$m1" = "exit code 1" ] || fail "trial 1 (a disk with room): $m1"
    [ "$m2" = "$DISK_FULL_MSG" ] || fail "trial 2 (its disk full at its end): $m2"
    sql_is "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='FAILED' AND attempt=1" 3 ||
        fail "not 3 FAILED in attempt 1 ($SQL_GOT)"
    FULL_T2=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND sequence=2")
    curl -sf "http://127.0.0.1:$port/api/v1/nni/trial-jobs/$FULL_T2" | grep -qF "\"message\":\"$DISK_FULL_MSG\"" ||
        fail "REST trial-jobs does not show the message"
    nnictl trial ls "$id" | grep -qF "$DISK_FULL_MSG" || fail "nnictl trial ls does not show the message"
}

# assert_kept_counts ID: once the experiment's api has exited (its last fold and refresh
# done), the kept counts equal a recount of the rows, both ways: metric_count per block (the
# current attempts' metrics), exp_counter's metric totals and its trial gauges
# (migrations 019-021). Used after kill -9s (e2e/35b) and injected faults (the sweep).
assert_kept_counts() {
    local id=$1 bad
    bad=$(sql "SELECT 'metric_count ' || block FROM (
                 SELECT block, periodical, final FROM metric_count WHERE experiment_id='$id'
                   AND (periodical != 0 OR final != 0)
                 EXCEPT SELECT t.sequence >> 6, sum(m.type = 'PERIODICAL'), sum(m.type = 'FINAL') FROM trial t
                   JOIN metric m ON m.trial_id = t.id AND m.attempt = t.attempt
                   WHERE t.experiment_id='$id' GROUP BY 1)
               UNION ALL SELECT 'metrics of block ' || block || ' not counted' FROM (
                 SELECT t.sequence >> 6 AS block, sum(m.type = 'PERIODICAL'), sum(m.type = 'FINAL') FROM trial t
                   JOIN metric m ON m.trial_id = t.id AND m.attempt = t.attempt
                   WHERE t.experiment_id='$id' GROUP BY 1
                 EXCEPT SELECT block, periodical, final FROM metric_count WHERE experiment_id='$id')
               UNION ALL SELECT 'metrics:' || m.type FROM metric m JOIN trial t ON t.id = m.trial_id
                 WHERE t.experiment_id='$id' GROUP BY m.type HAVING count(*) != coalesce((SELECT n FROM exp_counter
                   WHERE experiment_id='$id' AND name = 'metrics:' || m.type), 0)
               UNION ALL SELECT 'trials:' || status FROM trial_status_count WHERE experiment_id='$id'
                 GROUP BY status HAVING sum(n) != coalesce((SELECT n FROM exp_counter
                   WHERE experiment_id='$id' AND name = 'trials:' || status), 0)")
    [ -z "$bad" ] || fail "$id: kept counts differ from a recount: $bad"
}

#!/usr/bin/env bash
# What user code inherits from the environment of `nnictl create` (issue 29): a local
# trial and a customized tuner's process get it less the clouds' credentials
# (AZURE_CLIENT_SECRET, ALIBABA_CLOUD_ACCESS_KEY_SECRET, ...: docs/security.md), unless
# the config says passCredentials: true; a value that is not a boolean is refused with
# its file:line:col. The same experiment's classArgs password and a URL's password
# reach the tuner, while the database holds neither and the shown config masks them.
. "$(dirname "$0")/lib.sh"

export PYTHONPATH="$TRIALQ_SRC/tests/dispatcher${PYTHONPATH:+:$PYTHONPATH}"
export TRIALQ_PYTHON=$PY PYTHONDONTWRITEBYTECODE=1
export AZURE_CLIENT_SECRET=az-client-secret-1 AZURE_CLIENT_CERTIFICATE_PASSWORD=az-cert-pass-2 \
    ALIBABA_CLOUD_ACCESS_KEY_SECRET=ali-secret-3 ALIBABA_CLOUD_ACCESS_KEY_ID=ali-id-4 \
    AWS_SECRET_ACCESS_KEY=aws-secret-5 AZURE_OTHER_SECRET=az-other-6 TRIALQ_E2E_PLAIN=plain-7
creds=(AZURE_CLIENT_SECRET AZURE_CLIENT_CERTIFICATE_PASSWORD ALIBABA_CLOUD_ACCESS_KEY_SECRET
       ALIBABA_CLOUD_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AZURE_OTHER_SECRET)

# a tuner that writes its environment and its classArgs, then proposes x = 1 once
mkdir -p "$WORK/algo"
cat > "$WORK/algo/envtuner.py" <<'PY'
import json, os
from nni import NoMoreTrialError
from nni.tuner import Tuner

class EnvTuner(Tuner):
    def __init__(self, out, db_pass, dsn, headers):
        with open(out, 'w') as f:
            json.dump({'env': dict(os.environ), 'db_pass': db_pass, 'dsn': dsn, 'headers': headers}, f)
        self.sent = False

    def generate_parameters(self, parameter_id, **kwargs):
        if self.sent:
            raise NoMoreTrialError()
        self.sent = True
        return {'x': 1}

    def receive_trial_result(self, parameter_id, parameters, value, **kwargs):
        pass

    def update_search_space(self, search_space):
        pass
PY

# experiment <dir> [passCredentials]
experiment() {
    mkdir -p "$1"
    printf 'env > "$NNI_SYS_DIR/env.txt"\n' > "$1/trial.sh"
    write_config "$1/config.yml" searchSpace='{x: {_type: choice, _value: [1]}}' passCredentials="${2:-}" \
        tuner="{codeDirectory: $WORK/algo, className: envtuner.EnvTuner, classArgs: {out: $1/tuner.json,
          db_pass: classargs-pass-8, dsn: 'postgres://u:dsn-pass-9@db.example:5432/x',
          headers: ['Authorization: Bearer bearer-tok-10']}}"
}

run() { # <dir> -> the experiment's id, DONE
    local port
    port=$(free_port)
    nnictl create --config "$1/config.yml" --port "$port" > "$1/create.out" || fail "create: $(cat "$1/create.out")"
    id=$(exp_id_of "$1/create.out")
    wait_status "$id" DONE 90
    trial_env=$(sql "SELECT trial_dir FROM trial WHERE experiment_id='$id'")/env.txt
    [ -s "$trial_env" ] || fail "the trial wrote no environment ($trial_env)"
    [ -s "$1/tuner.json" ] || fail "the tuner wrote nothing"
}

# tuner_env <dir> <name>: the tuner's value of name, or nothing
tuner_env() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["env"].get(sys.argv[2], ""))' "$1/tuner.json" "$2"; }

# ---- by default: no credential reaches the trial or the tuner ----
experiment "$WORK/plain"
run "$WORK/plain"
grep -qx "TRIALQ_E2E_PLAIN=plain-7" "$trial_env" || fail "the trial lost an ordinary variable"
[ "$(tuner_env "$WORK/plain" TRIALQ_E2E_PLAIN)" = plain-7 ] || fail "the tuner lost an ordinary variable"
for v in "${creds[@]}"; do
    grep -q "^$v=" "$trial_env" && fail "the trial inherited $v"
    [ -z "$(tuner_env "$WORK/plain" "$v")" ] || fail "the tuner inherited $v"
done
pass "a local trial and the tuner do not inherit the clouds' credentials"

# the classArgs secrets reached the tuner whole; the database holds none; shown masked
$PY - "$WORK/plain/tuner.json" <<'PY' || fail "the tuner's classArgs"
import json, sys
t = json.load(open(sys.argv[1]))
assert t['db_pass'] == 'classargs-pass-8', t['db_pass']
assert t['dsn'] == 'postgres://u:dsn-pass-9@db.example:5432/x', t['dsn']
assert t['headers'] == ['Authorization: Bearer bearer-tok-10'], t['headers']
PY
sqlite3 "$DB" "PRAGMA wal_checkpoint(TRUNCATE)" > /dev/null
for s in classargs-pass-8 dsn-pass-9 bearer-tok-10; do
    grep -qa "$s" "$DB"* && fail "the database holds $s"
done
nnictl config show "$id" > "$WORK/shown" || fail "config show"
grep -q 'postgres://u:\*\*\*@db.example:5432/x' "$WORK/shown" || fail "config show: the dsn is not masked: $(cat "$WORK/shown")"
grep -Eq 'classargs-pass-8|dsn-pass-9|bearer-tok-10' "$WORK/shown" && fail "config show shows a secret"
pass "classArgs secrets (db_pass, a URL's password, a Bearer header) reach the tuner, not the database or config show"

# ---- passCredentials: true hands them on ----
experiment "$WORK/pass" true
run "$WORK/pass"
for v in "${creds[@]}"; do
    grep -qx "$v=${!v}" "$trial_env" || fail "passCredentials: the trial did not get $v"
    [ "$(tuner_env "$WORK/pass" "$v")" = "${!v}" ] || fail "passCredentials: the tuner did not get $v"
done
pass "passCredentials: true: the trial and the tuner get them"

# ---- a value that is not a boolean ----
experiment "$WORK/bad" maybe
line=$(grep -n '^passCredentials:' "$WORK/bad/config.yml" | cut -d: -f1)
nnictl create --config "$WORK/bad/config.yml" --dry-run > "$WORK/bad.out" 2>&1 && fail "passCredentials: maybe accepted"
grep -q "config.yml:$line:[0-9]*: passCredentials:" "$WORK/bad.out" || fail "no file:line:col: $(cat "$WORK/bad.out")"
pass "passCredentials: maybe refused: $(head -1 "$WORK/bad.out")"
nnictl stop --all > /dev/null
assert_no_leftovers
echo "13-trial-environment: passed"

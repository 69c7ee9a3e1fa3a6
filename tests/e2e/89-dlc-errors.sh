#!/usr/bin/env bash
# PAI-DLC at `nnictl create`: a wrong secret, an unknown AccessKey ID, a workspace the
# account lacks, a NAS not mounted here, plain http to another host, no access key at
# all, a resource group as ecsSpec, the default endpoints (of a region, of `share`) out
# of reach: each is refused with a clear message, nothing is created (no experiment, no
# job), and the secret is in no message. The access key from ALIBABA_CLOUD_ACCESS_KEY_ID
# / _SECRET instead of the config runs trials. The secret is in no log, no answer of the
# REST API, nor `nnictl config show`, export, a pack or the database (it is in the
# experiment's secrets file, removed with the experiment; a loaded pack gets it back from
# the config file; an older database's is moved there at the next nnictl). Over https:
# the CA named by caBundle works, an unknown CA is refused at create, insecure: true
# works with a warning.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/dlc.sh"

dlc_start_server
port=$(free_port)
n=0
# refused <what> <expected text> <sed expression on config.yml>
refused() {
    n=$((n + 1))
    dlc_experiment "$WORK/bad$n" 1 1 1
    sed -i "$3" "$WORK/bad$n/config.yml"
    if nnictl create --config "$WORK/bad$n/config.yml" --port "$port" > "$WORK/bad$n.out" 2>&1; then
        cat "$WORK/bad$n.out"; fail "$1: create succeeded"
    fi
    grep -q -- "$2" "$WORK/bad$n.out" || { cat "$WORK/bad$n.out"; fail "$1: no '$2' in the error"; }
    dlc_assert_no_secret "$WORK/bad$n.out"
    [ "$(sql "SELECT count(*) FROM experiment" 2>/dev/null || echo 0)" = 0 ] || fail "$1: an experiment was created"
    [ "$(dlc_stat "s['created']")" = 0 ] || fail "$1: a job was created"
    pass "$1: $(grep -m1 -o "trainingService: .*" "$WORK/bad$n.out" | cut -c1-160)"
}
refused "a wrong secret" "SignatureDoesNotMatch" "s/accessKeySecret: .*/accessKeySecret: not-the-secret/"
refused "an unknown AccessKey ID" "InvalidAccessKeyId.NotFound" "s/accessKeyId: .*/accessKeyId: LTAInobody/"
refused "a workspace the account lacks" "WorkspaceId is not valid" "s/workspaceId: .*/workspaceId: \"999\"/"
refused "no NAS mounted here" "is not a directory (the NAS data source must be mounted" \
    "s|localStorageMountPoint: .*|localStorageMountPoint: $WORK/no-such-mount|"
refused "plain http to another host" "plain http" "s|endpoint: .*|endpoint: http://192.0.2.1:80|"
refused "no access key" "no access key" "/accessKey/d"
# the default endpoints (not reachable from the tests: the error names them)
refused "region cn-test, no endpoint" "cannot reach DLC at https://pai-dlc.cn-test.aliyuncs.com" "/endpoint:/d"
refused "region share, no endpoint" "cannot reach DLC at https://pai-dlc-share.aliyuncs.com" \
    "/endpoint:/d; s/region: .*/region: share/"
refused "a dedicated resource group" "is not supported yet" "s/ecsSpec: .*/ecsSpec: \"{'resource_id': 'rg-1', 'cpu': 4}\"/"

# the access key from the environment, not the config; the secret shown nowhere
dlc_experiment "$WORK/env" 2 3 3
sed -i "/accessKey/d" "$WORK/env/config.yml"
ALIBABA_CLOUD_ACCESS_KEY_ID=$DLC_KEY_ID ALIBABA_CLOUD_ACCESS_KEY_SECRET=$DLC_SECRET \
    nnictl create --config "$WORK/env/config.yml" --port "$port" > "$WORK/env.out" 2>&1 ||
    { cat "$WORK/env.out"; fail "create with the key in the environment failed"; }
id=$(exp_id_of "$WORK/env.out")
wait_status "$id" DONE 120
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 3 ] || fail "env key: trials"
pass "the access key from ALIBABA_CLOUD_ACCESS_KEY_ID/_SECRET: 3 trials SUCCEEDED"

# secrets files that no experiment owns (a create killed between the file and the row):
# the next create removes those older than a minute, not a younger one (a create running)
mkdir -p "$NNI_HOME/secrets"
echo '{}' > "$NNI_HOME/secrets/zz0rphan.json"
echo '{}' > "$NNI_HOME/secrets/yy0ung00.json"
touch -d '2 minutes ago' "$NNI_HOME/secrets/zz0rphan.json"
# the secret given in the config: shown by no command, no REST answer, no log
dlc_experiment "$WORK/shown" 1 2 4
port2=$(free_port)
nnictl create --config "$WORK/shown/config.yml" --port "$port2" > "$WORK/shown.out" 2>&1 ||
    { cat "$WORK/shown.out"; fail "create failed"; }
id2=$(exp_id_of "$WORK/shown.out")
[ ! -e "$NNI_HOME/secrets/zz0rphan.json" ] && [ -e "$NNI_HOME/secrets/yy0ung00.json" ] ||
    fail "create: the old orphan secrets file is $(ls "$NNI_HOME/secrets")"
rm "$NNI_HOME/secrets/yy0ung00.json"
pass "nnictl create removed an orphaned secrets file (older than a minute), kept a young one"
wait_status "$id2" DONE 120
nnictl config show "$id2" > "$WORK/show.out" 2>&1 || fail "nnictl config show failed"
grep -q "accessKeySecret" "$WORK/show.out" || { cat "$WORK/show.out"; fail "config show has no accessKeySecret line"; }
curl -sf "http://127.0.0.1:$port2/api/v1/nni/experiment" > "$WORK/rest-exp.json"
curl -sf "http://127.0.0.1:$port2/api/v1/nni/trial-jobs" > "$WORK/rest-trials.json"
nnictl stop "$id2" > /dev/null
nnictl experiment export "$id2" --filename "$WORK/export.json" --type json > /dev/null || fail "export failed"
nnictl experiment save "$id2" --path "$WORK" > /dev/null || fail "nnictl experiment save failed"
sqlite3 "$DB" .dump > "$WORK/db.dump"
dlc_assert_no_secret "$WORK/shown.out" "$WORK/show.out" "$WORK/rest-exp.json" "$WORK/rest-trials.json" \
    "$WORK/env.out" "$WORK/export.json" "$WORK/db.dump" "$DB"* "$WORK/nni_experiment_$id2.sqlite" \
    $(find "$NNI_HOME" "$DLC_NAS" -type f -name "*.log" -o -type f -name "trial.std*" | sort)
pass "the secret is in no nnictl output, REST answer, log, export, pack or the database file"
# where it is: the experiment's secrets file, the owner's alone; the stored config says so
sec="$NNI_HOME/secrets/$id2.json"
[ "$(stat -c %a "$sec")" = 600 ] && [ "$(stat -c %a "$NNI_HOME/secrets")" = 700 ] || fail "secrets file modes"
grep -q -F "$DLC_SECRET" "$sec" || fail "the secret is not in $sec"
grep -q -F "kept outside the database" "$WORK/db.dump" || fail "no placeholder in the stored config"
nnictl experiment delete "$id2" > /dev/null || fail "delete failed"
[ ! -e "$sec" ] || fail "nnictl experiment delete left $sec"
pass "the secret in $id2's secrets file (0600), removed by nnictl experiment delete"
# the pack holds no secret: loaded, they come back from the config file
nnictl experiment load --path "$WORK/nni_experiment_$id2.sqlite" > "$WORK/load.out" 2>&1 || { cat "$WORK/load.out"; fail "load"; }
grep -q "The pack holds no secrets" "$WORK/load.out" || { cat "$WORK/load.out"; fail "load does not say the secrets are missing"; }
[ ! -e "$sec" ] || fail "a secrets file after load"
nnictl experiment secrets "$id2" --config "$WORK/shown/config.yml" > "$WORK/secrets.out" 2>&1 || { cat "$WORK/secrets.out"; fail "experiment secrets"; }
grep -q -F "$DLC_SECRET" "$sec" && [ "$(stat -c %a "$sec")" = 600 ] || fail "experiment secrets did not write $sec"
dlc_assert_no_secret "$WORK/load.out" "$WORK/secrets.out"
pass "a loaded pack: no secrets file until nnictl experiment secrets --config writes it"
# a database written before secrets files: the next nnictl moves them out
sql "UPDATE experiment SET config = json_set(config, '$.trainingService.accessKeySecret', '$DLC_SECRET') WHERE id='$id'"
rm -f "$NNI_HOME/secrets/.moved" "$NNI_HOME/secrets/$id.json"
nnictl experiment list --all > "$WORK/list.out" 2>&1 || fail "experiment list"
grep -q "experiment $id: 1 secret value of its config moved out of the database" "$WORK/list.out" ||
    { cat "$WORK/list.out"; fail "no migration said"; }
sqlite3 "$DB" .dump > "$WORK/db2.dump"
sqlite3 "$DB" "PRAGMA wal_checkpoint(TRUNCATE)" > /dev/null
dlc_assert_no_secret "$WORK/db2.dump" "$WORK/list.out" "$DB"*
grep -q -F "$DLC_SECRET" "$NNI_HOME/secrets/$id.json" || fail "the migrated secret is not in its file"
pass "a stored config with a secret (an older database): moved to its secrets file at the next open"

# ---- TLS: the server's certificate from a throwaway CA ----
nnictl stop --all > /dev/null
dlc_stop_server
tls=$WORK/tls
mkdir -p "$tls"
(cd "$tls" && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 1 -subj "/CN=trialq test CA" &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key -out srv.csr -subj "/CN=127.0.0.1" &&
    printf 'subjectAltName=IP:127.0.0.1\n' > ext &&
    openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile ext -out srv.pem) \
    > "$WORK/openssl.out" 2>&1 || { cat "$WORK/openssl.out"; fail "openssl"; }
DLC_SCHEME=https DLC_CURL_OPTS="--cacert $tls/ca.pem"
dlc_start_server --tls-cert "$tls/srv.pem" --tls-key "$tls/srv.key"
nexp=$(sql "SELECT count(*) FROM experiment")
dlc_experiment "$WORK/tls1" 1 1 5
if nnictl create --config "$WORK/tls1/config.yml" --port "$(free_port)" > "$WORK/tls1.out" 2>&1; then
    cat "$WORK/tls1.out"; fail "https with an unknown CA: create succeeded"
fi
grep -q "SSL certificate problem.*the certificate is not trusted: name its CA with caBundle" "$WORK/tls1.out" ||
    { cat "$WORK/tls1.out"; fail "no certificate error"; }
[ "$(sql "SELECT count(*) FROM experiment")" = "$nexp" ] || fail "an experiment was created"
pass "https, the CA not named: refused at create ($(grep -o "SSL certificate problem[^:]*" "$WORK/tls1.out" | head -1))"
# tls_create <name> <extra trainingService line>: created through https (its check lists
# the jobs there); sets x
tls_create() {
    dlc_experiment "$WORK/$1" 1 1 6 "$2"
    nnictl create --config "$WORK/$1/config.yml" --port "$(free_port)" > "$WORK/$1.out" 2>&1 ||
        { cat "$WORK/$1.out"; fail "$1: create failed"; }
    x=$(exp_id_of "$WORK/$1.out")
}
tls_create tls2 "  caBundle: $tls/ca.pem"
! grep -q "WARNING" "$WORK/tls2.out" || { cat "$WORK/tls2.out"; fail "a warning with caBundle"; }
wait_status "$x" DONE 60
[ "$(sql "SELECT status FROM trial WHERE experiment_id='$x'")" = SUCCEEDED ] || fail "caBundle: the trial did not succeed"
nnictl stop "$x" > /dev/null
pass "https with caBundle naming the CA: a trial to DONE"
tls_create tls3 "  insecure: true"
grep -q "WARNING: .*insecure: true: the TLS certificate of https://127.0.0.1:[0-9]* is not verified" "$WORK/tls3.out" ||
    { cat "$WORK/tls3.out"; fail "no warning for insecure: true"; }
nnictl stop "$x" > /dev/null
pass "https with insecure: true: created (the jobs listed without verifying), with a warning"
assert_no_leftovers
echo "89-dlc-errors: passed"

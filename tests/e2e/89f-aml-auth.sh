#!/usr/bin/env bash
# Azure ML's other credentials: a service principal with a certificate
# (AZURE_CLIENT_CERTIFICATE_PATH: a PEM with the key and the certificate; the token
# request carries a client assertion signed RS256, which the server verifies against the
# certificate registered on the application) runs trials, and one whose certificate is
# not registered is refused at create (AADSTS700027), a PEM whose key is not the
# certificate's before any request; with no service principal, the
# Azure CLI's login (`az account get-access-token`, a fake az printing what az prints)
# runs trials, and an az that is not logged in is refused at create with az's message.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/aml.sh"

cert() { openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.crt" -days 2 -subj /CN=trialq-test \
    2>/dev/null && cat "$1.key" "$1.crt" > "$1.pem" || fail "openssl cannot make a certificate"; }
cert "$WORK/sp"
cert "$WORK/other"
CERT_CLIENT=cert-client-$RANDOM
aml_start_server --client-cert "$CERT_CLIENT:$WORK/sp.pem"
port=$(free_port)
# run <dir> <env...>: create with the environment given (AZURE_* of lib/aml.sh unset first)
run() {
    local dir=$1
    shift
    (unset AZURE_TENANT_ID AZURE_CLIENT_ID AZURE_CLIENT_SECRET
     for kv in "$@"; do export "${kv?}"; done
     exec nnictl create --config "$dir/config.yml" --port "$port") > "$dir.create.out" 2>&1
}
done3() {
    local id
    id=$(exp_id_of "$1.create.out")
    wait_status "$id" DONE 60
    [ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")" = 3 ] ||
        fail "$1: not 3 trials SUCCEEDED"
    assert_dir_metrics "$id"
    nnictl stop "$id" > /dev/null
}

# ---- a certificate ----
aml_experiment "$WORK/cert" 3 3 3
run "$WORK/cert" AZURE_TENANT_ID="$AML_TENANT" AZURE_CLIENT_ID="$CERT_CLIENT" \
    AZURE_CLIENT_CERTIFICATE_PATH="$WORK/sp.pem" || { cat "$WORK/cert.create.out"; fail "create with a certificate failed"; }
done3 "$WORK/cert"
[ "$(aml_stat 's["refused"]')" = "{}" ] || fail "requests refused: $(aml_stat 's["refused"]')"
keyline=$(sed -n 2p "$WORK/sp.key")
! grep -rqaF -- "$keyline" "$NNI_HOME" "$AML_BLOB" || fail "the private key is in the home or on the datastore"
pass "a certificate: client assertions verified by the server, 3 trials SUCCEEDED ($(aml_stat 's["tokens"]') tokens)"
aml_experiment "$WORK/badcert" 1 1 3
if run "$WORK/badcert" AZURE_TENANT_ID="$AML_TENANT" AZURE_CLIENT_ID="$CERT_CLIENT" \
    AZURE_CLIENT_CERTIFICATE_PATH="$WORK/other.pem"; then fail "an unregistered certificate: create succeeded"; fi
grep -q "AADSTS700027.*not registered.*upload it to the app registration" "$WORK/badcert.create.out" ||
    { cat "$WORK/badcert.create.out"; fail "an unregistered certificate: no clear error"; }
pass "an unregistered certificate: $(grep -o 'aml: .*' "$WORK/badcert.create.out" | cut -c1-200)"

cat "$WORK/other.key" "$WORK/sp.crt" > "$WORK/mixed.pem"
if run "$WORK/badcert" AZURE_TENANT_ID="$AML_TENANT" AZURE_CLIENT_ID="$CERT_CLIENT" \
    AZURE_CLIENT_CERTIFICATE_PATH="$WORK/mixed.pem"; then fail "a key not of the certificate: create succeeded"; fi
grep -q "the private key in .*mixed.pem is not the certificate's" "$WORK/badcert.create.out" ||
    { cat "$WORK/badcert.create.out"; fail "a key not of the certificate: no clear error"; }
pass "a PEM whose key is not its certificate's: refused before any request"

# ---- the Azure CLI ----
mkdir -p "$WORK/azbin"
cat > "$WORK/azbin/az" <<SH
#!/bin/sh
# a fake az: what \`az account get-access-token --output json\` prints (az 2.54+)
echo "\$*" >> "$WORK/az.calls"
[ "\$*" = "account get-access-token --resource https://management.azure.com/ --output json" ] ||
    { echo "ERROR: unexpected arguments: \$*" >&2; exit 2; }
[ ! -e "$WORK/az.loggedout" ] || { echo "ERROR: Please run 'az login' to setup account." >&2; exit 1; }
tok=\$(curl -sf -X POST -d '{"tid": "$AML_TENANT", "exp_in": 3600}' "$AML_URL/_test/token" |
    "$PY" -c 'import json,sys; print(json.load(sys.stdin)["access_token"])') || exit 1
exp=\$((\$(date +%s) + 3600))
printf '{\n  "accessToken": "%s",\n  "expiresOn": "%s",\n  "expires_on": %s,\n  "subscription": "$AML_SUB",\n  "tenant": "$AML_TENANT",\n  "tokenType": "Bearer"\n}\n' \
    "\$tok" "\$(date -d @\$exp '+%Y-%m-%d %H:%M:%S.000000')" "\$exp"
SH
chmod +x "$WORK/azbin/az"
aml_experiment "$WORK/cli" 3 3 4
run "$WORK/cli" PATH="$WORK/azbin:$PATH" || { cat "$WORK/cli.create.out"; fail "create with the Azure CLI failed"; }
done3 "$WORK/cli"
[ "$(wc -l < "$WORK/az.calls")" -ge 2 ] || fail "az was not asked for tokens (create and worker)"
pass "the Azure CLI's login: 3 trials SUCCEEDED, az asked $(wc -l < "$WORK/az.calls") times"
touch "$WORK/az.loggedout"
aml_experiment "$WORK/nocli" 1 1 4
if run "$WORK/nocli" PATH="$WORK/azbin:$PATH"; then fail "az not logged in: create succeeded"; fi
grep -q "az account get-access-token.*failed (exit 1): ERROR: Please run 'az login'" "$WORK/nocli.create.out" ||
    { cat "$WORK/nocli.create.out"; fail "az not logged in: no clear error"; }
pass "az not logged in: $(grep -o 'aml: .*' "$WORK/nocli.create.out" | cut -c1-200)"
assert_no_leftovers
echo "89f-aml-auth: passed"

#!/usr/bin/env bash
# Azure ML at `nnictl create`: each refusal of the identity platform (no such tenant,
# no such application, a wrong secret), a service principal half set, no credential at
# all (no service principal, no az on PATH), a principal without a role on the
# workspace, a subscription, resource group, workspace, compute target or datastore the
# workspace lacks, no mount here, plain http to another host, an https endpoint whose CA
# is not named: each is refused with a clear message naming what to fix, nothing is
# created (no experiment, no job) and the secret is in no message. Over https, caBundle
# naming the CA runs a trial and insecure: true creates with a warning.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/aml.sh"

aml_start_server
port=$(free_port)
n=0
# refused <what> <expected text> <sed expression on config.yml> [VAR=VALUE... for the environment]
refused() {
    local what=$1 want=$2 expr=$3
    shift 3
    n=$((n + 1))
    aml_experiment "$WORK/bad$n" 1 1 1
    sed -i "$expr" "$WORK/bad$n/config.yml"
    if (for kv in "$@"; do export "${kv?}"; done; exec nnictl create --config "$WORK/bad$n/config.yml" --port "$port") \
        > "$WORK/bad$n.out" 2>&1; then
        cat "$WORK/bad$n.out"; fail "$what: create succeeded"
    fi
    grep -q -- "$want" "$WORK/bad$n.out" || { echo "output:"; cat "$WORK/bad$n.out"; fail "$what: no '$want' in the error"; }
    aml_assert_no_secret "$WORK/bad$n.out"
    [ "$(sql "SELECT count(*) FROM experiment" 2>/dev/null || echo 0)" = 0 ] || fail "$what: an experiment was created"
    [ "$(aml_stat "s['created'] + s.get('put', 0)")" = 0 ] || fail "$what: a job was PUT"
    pass "$what: $(grep -m1 -o "aml: .*\|trainingService.*" "$WORK/bad$n.out" | cut -c1-200)"
}
refused "no such tenant" "AADSTS90002.*check AZURE_TENANT_ID" "" AZURE_TENANT_ID=nobody
refused "no such application" "AADSTS700016.*check AZURE_CLIENT_ID" "" AZURE_CLIENT_ID=nobody
refused "a wrong secret" "AADSTS7000215.*AZURE_CLIENT_SECRET must be the secret's value" "" AZURE_CLIENT_SECRET=not-it
refused "a half service principal" "AZURE_TENANT_ID and AZURE_CLIENT_ID are not both set" "" AZURE_CLIENT_ID=
refused "no credential at all" "no credential: set AZURE_TENANT_ID" "" AZURE_CLIENT_SECRET= PATH="$BIN_DIR:/usr/bin:/bin"
refused "a principal without a role" "may not read the workspace.*AuthorizationFailed.*give it the role AzureML Data Scientist" "" \
    AZURE_CLIENT_ID=norole AZURE_CLIENT_SECRET=norole-pw
refused "a wrong subscription" "subscription 'sub-nope' not found.*subscriptionId" "s/subscriptionId: .*/subscriptionId: sub-nope/"
refused "a wrong resource group" "resource group 'rg-nope' not found.*resourceGroup" "s/resourceGroup: .*/resourceGroup: rg-nope/"
refused "a wrong workspace" "workspace 'ws-nope' not found.*workspaceName" "s/workspaceName: .*/workspaceName: ws-nope/"
refused "a wrong compute target" "has no compute 'gpu-nope'.*computeTarget" "s/computeTarget: .*/computeTarget: gpu-nope/"
refused "a wrong datastore" "has no datastore 'blob-nope'.*datastore" "s/computeTarget: .*/&\n  datastore: blob-nope/"
refused "no mount here" "is not a writable directory (the datastore's container" \
    "s|localStorageMountPoint: .*|localStorageMountPoint: $WORK/no-such-mount|"
refused "no localStorageMountPoint" "localStorageMountPoint is required for aml" "/localStorageMountPoint/d"
refused "plain http to another host" "is unencrypted" "s|managementEndpoint: .*|managementEndpoint: http://192.0.2.1:80|"
[ "$(aml_stat 's["refused"].get("invalid_client", 0)')" -ge 1 ] || fail "the wrong secret never reached the server"

# ---- TLS: the server's certificate from a throwaway CA ----
aml_stop_server
tls_ca "$WORK/tls"
AML_SCHEME=https AML_CURL_OPTS="--cacert $WORK/tls/ca.pem"
aml_start_server --tls-cert "$WORK/tls/srv.pem" --tls-key "$WORK/tls/srv.key"
refused "https, the CA not named" "SSL certificate problem.*name its CA with caBundle" ""
aml_experiment "$WORK/tls2" 1 1 6 "caBundle: $WORK/tls/ca.pem"
aml_create "$WORK/tls2" "$port"
! grep -q "WARNING" "$WORK/tls2.create.out" || { cat "$WORK/tls2.create.out"; fail "a warning with caBundle"; }
wait_status "$AML_ID" DONE 60
[ "$(sql "SELECT status FROM trial WHERE experiment_id='$AML_ID'")" = SUCCEEDED ] || fail "caBundle: the trial did not succeed"
nnictl stop "$AML_ID" > /dev/null
pass "https with caBundle naming the CA: a trial to DONE"
aml_experiment "$WORK/tls3" 1 1 6 "insecure: true"
aml_create "$WORK/tls3" "$(free_port)"
grep -q "WARNING: .*insecure: true: the TLS certificate of https://127.0.0.1:[0-9]* is not verified" "$WORK/tls3.create.out" ||
    { cat "$WORK/tls3.create.out"; fail "no warning for insecure: true"; }
nnictl stop "$AML_ID" > /dev/null
pass "https with insecure: true: created without verifying, with a warning"
assert_no_leftovers
echo "89d-aml-errors: passed"

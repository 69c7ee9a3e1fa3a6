#!/usr/bin/env bash
# kubeflow with pytorch-operator (PyTorchJob, master + worker) against the Kubernetes API
# test server over TLS with a bearer token: the cases of k8s_scenario (12 trials with
# metrics, kill, API failures, SIGKILL + resume, stop, rejected token).
. "$(dirname "$0")/lib.sh"
. "$TRIALQ_SRC/tests/servers/k8s_lib.sh"

K8S_API=kubeflow.org/v1 K8S_KIND=PyTorchJob K8S_PLURAL=pytorchjobs
K8S_AUTH=token
export KUBECONFIG="$WORK/kubeconfig"
K8S_NAME='nni-exp-%s-trial-%s'
K8S_CHECK_JOB="
rs = job['spec']['pytorchReplicaSpecs']
assert set(rs) == {'Master', 'Worker'} and rs['Worker']['replicas'] == 2, rs
m = rs['Master']['template']['spec']
c = m['containers'][0]
assert c['name'] == 'pytorch' and c['args'][1].endswith('/run_master.sh'), c
assert c['resources']['limits'] == {'memory': '1024Mi', 'cpu': '2'}, c['resources']
assert m['volumes'] == [{'name': 'nni-vol', 'azureFile': {'secretName': 'nni-secret-%s' % sys.argv[2], 'shareName': 'nnishare', 'readOnly': False}}], m['volumes']
"
# Azure file storage: the account key comes from Key Vault through the az CLI (a stub
# here, as the spec's test double says); the pods mount the share with a Secret
cat > "$BIN_DIR/az" <<'AZ'
#!/bin/sh
[ "$*" = "keyvault secret show --name nni-key --vault-name nni-vault" ] || { echo "unexpected: az $*" >&2; exit 1; }
echo '{"value": "c3RvcmFnZS1rZXk=", "id": "https://nni-vault.vault.azure.net/secrets/nni-key"}'
AZ
chmod +x "$BIN_DIR/az"
K8S_WANT_SECRETS="nni-secret-@ID@:Opaque"

k8s_scenario kubeflow master "  platform: kubeflow
  operator: pytorch-operator
  apiVersion: v1
  storage: {storageType: azureStorage, azureAccount: nniaccount, azureShare: nnishare, keyVaultName: nni-vault,
            keyVaultKey: nni-key, localMountPoint: $K8S_NFS}
  master: {replicas: 1, command: sh trial.sh, cpuNumber: 2, memorySize: 1gb, dockerImage: test/pytorch:1}
  worker: {replicas: 2, command: sleep 1, cpuNumber: 1, memorySize: 512mb, dockerImage: test/pytorch:1}"
echo "71-kubeflow-pytorch: passed"

#!/usr/bin/env bash
# adl (an AdaptDLJob with its PersistentVolumeClaim and ConfigMap, owned by the job)
# against the Kubernetes API test server over TLS with a bearer token: the cases of
# k8s_scenario (12 trials with metrics, kill, API failures, SIGKILL + resume, stop,
# rejected token). AdaptDL ships no code: the pods run in the code directory itself.
. "$(dirname "$0")/lib.sh"
. "$TRIALQ_SRC/tests/servers/k8s_lib.sh"

K8S_API=adaptdl.petuum.com/v1 K8S_KIND=AdaptDLJob K8S_PLURAL=adaptdljobs
K8S_AUTH=token
export KUBECONFIG="$WORK/kubeconfig"
K8S_NAME='nni-exp-%s-trial-%s'
K8S_CHECK_JOB="
sp = job['spec']
assert sp['preemptible'] is True
pod = sp['template']['spec']
c = pod['containers'][0]
assert c['name'] == 'main' and c['command'] == ['/run.sh'] and c['imagePullPolicy'] == 'Always', c
assert c['lifecycle']['preStop']['exec']['command'] == ['/cleanup.sh']
assert {e['name'] for e in c['env']} == {'ADAPTDL_CHECKPOINT_PATH', 'ADAPTDL_TENSORBOARD_LOGDIR', 'ADAPTDL_SHARE_PATH'}
assert c['resources'] == {'requests': {'memory': '1Gi', 'cpu': '1'}, 'limits': {'nvidia.com/gpu': '0'}}, c['resources']
vols = {v['name']: v for v in pod['volumes']}
assert vols['adaptdl-pvc']['persistentVolumeClaim']['claimName'] == md['name']
assert vols['adaptdl-nni-configmap']['configMap'] == {'name': md['name'], 'defaultMode': 511}
assert job['status']['phase'] == 'Succeeded'
"

k8s_scenario adl - "  platform: adl
  trialCommand: sh trial.sh
  nniManagerIp: 127.0.0.1
  image: test/adaptdl:1
  adaptive: true
  cpuNumber: 1
  memorySize: 1Gi
  checkpoint: {storageClass: hostpath, storageSize: 1Gi}
  nfs: {server: nfs.test, path: /exports/nni, containerMountPath: /tmp/adl-nfs, localMountPoint: $K8S_NFS}"
echo "73-adl: passed"

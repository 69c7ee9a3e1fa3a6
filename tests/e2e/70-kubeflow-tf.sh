#!/usr/bin/env bash
# kubeflow with tf-operator (TFJob, worker + ps) against the Kubernetes API test server
# over TLS with a client certificate (kubeconfig *-data fields): 12 trials to DONE with
# their metrics read from the shared storage, a kill, API failures (also 429 and expired
# list continue tokens), paged listings instead of a GET per job, a SIGKILL + resume
# without a duplicated job, stop deleting every job of the experiment, and a rejected
# token reported at create. See tests/servers/k8s_lib.sh (k8s_scenario).
. "$(dirname "$0")/lib.sh"
. "$TRIALQ_SRC/tests/servers/k8s_lib.sh"

K8S_API=kubeflow.org/v1 K8S_KIND=TFJob K8S_PLURAL=tfjobs
K8S_AUTH=cert-data
K8S_LIST_CHECKS=1 # also 429 with Retry-After and expired list continue tokens
export KUBECONFIG="$WORK/kubeconfig"
K8S_NAME='nni-exp-%s-trial-%s'
K8S_CHECK_JOB="
rs = job['spec']['tfReplicaSpecs']
assert set(rs) == {'Worker', 'Ps'}, rs
w = rs['Worker']['template']['spec']
c = w['containers'][0]
assert c['name'] == 'tensorflow' and c['image'] == 'test/tf:1', c
assert c['args'] == ['sh', '/tmp/mount/nni/%s/%s/run_worker.sh' % (sys.argv[2], md['labels']['trialId'])], c['args']
assert c['resources']['requests'] == c['resources']['limits'] == {'memory': '512Mi', 'cpu': '1'}, c['resources']
assert c['volumeMounts'] == [{'name': 'nni-vol', 'mountPath': '/tmp/mount'}]
assert w['volumes'] == [{'name': 'nni-vol', 'nfs': {'server': 'nfs.test', 'path': '/exports/nni'}}], w['volumes']
assert w['restartPolicy'] == 'ExitCode'
assert w['imagePullSecrets'] == [{'name': 'nni-secret-%s-worker' % sys.argv[2]}], w.get('imagePullSecrets')
assert 'imagePullSecrets' not in rs['Ps']['template']['spec']
assert rs['Ps']['replicas'] == 1 and rs['Ps']['template']['spec']['containers'][0]['resources']['limits']['memory'] == '256Mi'
assert job['status']['conditions'][-1]['type'] == 'Succeeded'
"
# a private registry's credentials: a dockerconfigjson Secret the worker pods must name
echo '{"auths": {"registry.test": {"auth": "dXNlcjpwYXNz"}}}' > "$WORK/docker-config.json"
K8S_WANT_SECRETS="nni-secret-@ID@-worker:kubernetes.io/dockerconfigjson"

k8s_scenario kubeflow worker "  platform: kubeflow
  operator: tf-operator
  apiVersion: v1
  storage: {storageType: nfs, server: nfs.test, path: /exports/nni, localMountPoint: $K8S_NFS}
  worker: {replicas: 1, command: sh trial.sh, cpuNumber: 1, memorySize: 512mb, dockerImage: test/tf:1, privateRegistryAuthPath: $WORK/docker-config.json}
  ps: {replicas: 1, command: sleep 600, cpuNumber: 1, memorySize: 256mb, dockerImage: test/tf:1}"
echo "70-kubeflow-tf: passed"

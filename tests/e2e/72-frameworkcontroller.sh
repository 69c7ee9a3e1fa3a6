#!/usr/bin/env bash
# frameworkcontroller (a Framework with two task roles, the barrier's injector and
# ports) against the Kubernetes API test server over TLS with a client certificate file:
# the cases of k8s_scenario (12 trials with metrics, kill, API failures, SIGKILL +
# resume, stop, rejected token).
. "$(dirname "$0")/lib.sh"
. "$TRIALQ_SRC/tests/servers/k8s_lib.sh"

K8S_API=frameworkcontroller.microsoft.com/v1 K8S_KIND=Framework K8S_PLURAL=frameworks
K8S_AUTH=cert
export KUBECONFIG="$WORK/kubeconfig"
K8S_NAME='nniexp%strial%s'
K8S_CHECK_JOB="
sp = job['spec']
assert sp['executionType'] == 'Start'
roles = sp['taskRoles']
assert [r['name'] for r in roles] == ['trainer', 'helper'] and roles[1]['taskNumber'] == 2, roles
assert roles[0]['frameworkAttemptCompletionPolicy'] == {'minFailedTaskCount': 1, 'minSucceededTaskCount': -1}
pod = roles[0]['task']['pod']['spec']
c = pod['containers'][0]
assert c['name'] == 'framework' and c['command'][1].endswith('/run_trainer.sh'), c
assert c['ports'] == [{'containerPort': 4000}] and roles[1]['task']['pod']['spec']['containers'][0]['ports'] == [{'containerPort': 4001}]
assert {'name': 'frameworkbarrier-volume', 'mountPath': '/mnt/frameworkbarrier'} in c['volumeMounts']
assert pod['initContainers'][0]['image'] == 'frameworkcontroller/frameworkbarrier'
assert pod['restartPolicy'] == 'OnFailure' and pod['hostNetwork'] is False and pod['serviceAccountName'] == 'frameworkbarrier'
st = job['status']
assert st['state'] == 'Completed' and st['attemptStatus']['completionStatus']['type']['name'] == 'Succeeded', st
"

policy="frameworkAttemptCompletionPolicy: {minFailedTaskCount: 1, minSucceedTaskCount: -1}"
k8s_scenario frameworkcontroller trainer "  platform: frameworkcontroller
  storage: {storageType: nfs, server: nfs.test, path: /exports/nni, localMountPoint: $K8S_NFS}
  serviceAccountName: frameworkbarrier
  taskRoles:
    - {name: trainer, taskNumber: 1, command: 'test -n \"\$FB_FRAMEWORK_NAME\" && test \"\$FB_TRAINER_PORT\" = 4000 && sh trial.sh', gpuNumber: 0, cpuNumber: 1, memorySize: 512mb, dockerImage: test/fc:1, $policy}
    - {name: helper, taskNumber: 2, command: 'test \"\$FB_HELPER_PORT\" = 4001', gpuNumber: 0, cpuNumber: 1, memorySize: 128mb, dockerImage: test/fc:1, $policy}"
echo "72-frameworkcontroller: passed"

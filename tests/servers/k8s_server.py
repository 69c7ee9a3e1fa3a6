#!/usr/bin/python3
"""k8s_server.py: a Kubernetes API test server for trialq's kubeflow, frameworkcontroller
and adl platforms (no real cluster can run on the test machines).

It speaks the documented REST API of what those platforms use:
  discovery   GET /version, /api, /api/v1, /apis, /apis/<group>, /apis/<group>/<version>
  objects     create (POST, 201; 409 AlreadyExists), get (200; 404 NotFound), list with
              labelSelector (k=v, k==v, k!=v, k, !k; AND) in chunks (limit, continue:
              each chunk from a snapshot of the list taken at its first one, with
              metadata.continue and remainingItemCount; a continue token older than
              --continue-ttl is 410 Gone, reason Expired, as after etcd's compaction),
              patch one (PATCH, Content-Type application/merge-patch+json: RFC 7386, as
              kubectl patch --type=merge; other patch types are 415), delete one, delete
              collection
              by labelSelector (propagationPolicy accepted; dependents named in
              ownerReferences are garbage-collected)
              for tfjobs, pytorchjobs (kubeflow.org), frameworks
              (frameworkcontroller.microsoft.com), adaptdljobs (adaptdl.petuum.com), and
              core pods, secrets, configmaps, persistentvolumeclaims; apps deployments;
              storage.k8s.io storageclasses
  auth        over TLS: a bearer token (--token) or a client certificate signed by
              --client-ca; anything else is 401, --forbidden-token is 403
  status      TFJob/PyTorchJob conditions Created -> Running -> Succeeded|Failed (each with
              lastUpdateTime); Framework status.state AttemptCreationPending ->
              AttemptPreparing -> AttemptRunning -> Completed with
              attemptStatus.completionStatus.type.name; AdaptDLJob status.phase Pending ->
              Running -> Succeeded|Failed with completionTimestamp
  pods        every replica/task runs the container's command as a local process in its
              own mount namespace (unshare -m, so root is needed) where an nfs volume is
              bind-mounted from the local directory given by --nfs SERVER:PATH=DIR, an
              emptyDir from a temporary directory, an azureFile share from --azure
              SHARE=DIR (its Secret must hold the account), and a configMap item is written to a
              file (a command naming that mountPath runs the file). FrameworkController's
              barrier init container is simulated: it writes injector.sh.
  --sim-run S no process at all (for benchmarks, bench/cluster_scale.sh): a job runs for S
              seconds and then succeeds, having written what its chief/first replica's
              trial would have on the shared storage: --sim-metrics PERIODICAL records and
              one FINAL (ME-framed, in <NNI_SYS_DIR>/.nni/metrics) and 0 in
              <NNI_OUTPUT_DIR>/exitcode, both read from the launch script the container
              runs (found through its nfs/azureFile volumeMount); no pod objects are made
  test hooks  (no auth) POST /_test/fail {"mode": "5xx"|"429"|"slow"|"drop"|"hang", "seconds":
              S and/or "count": N (the next N requests), "delay": D} (429: Too Many
              Requests with Retry-After: D seconds, at least 1); POST /_test/continue
              {"ttl": S} sets --continue-ttl; POST /_test/deny {"list": true} answers every
              list 403 Forbidden (a role without the list verb), false lifts it;
              GET /_test/stats -> {"creates": {name: n}, "create_calls": n,
              "requests": n, "failed": n, "fault_served": n (requests that met the fault
              set last), "lists": n (chunked lists begun), "continues": n
              (chunks after the first), "expired": n (410 answers), "list_items": [n, ...]
              (the items each of the last 100 chunked lists matched, all chunks together),
              "routes": {"VERB /path/{ns}/...": n}}
              (routes: every non-test request by verb and path pattern, names and
              namespaces as {name} and {ns}); GET /_test/jobtimes -> {job name:
              {"created", "running", "done": unix seconds}}; GET /_test/objects
Served CRD versions: --crd GROUP=V1,V2 (default kubeflow.org=v1, the other two v1);
--no-crd GROUP leaves a group out (operator not installed).
"""
import argparse
import base64
import json
import os
import re
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

CORE = {
    # plural: (kind, namespaced, short names)
    'pods': ('Pod', True, ['po']),
    'secrets': ('Secret', True, []),
    'configmaps': ('ConfigMap', True, ['cm']),
    'persistentvolumeclaims': ('PersistentVolumeClaim', True, ['pvc']),
    'namespaces': ('Namespace', False, ['ns']),
}
GROUPS = {
    'kubeflow.org': {'tfjobs': ('TFJob', True, ['tfjob']), 'pytorchjobs': ('PyTorchJob', True, ['pytorchjob'])},
    'frameworkcontroller.microsoft.com': {'frameworks': ('Framework', True, ['fw'])},
    'adaptdl.petuum.com': {'adaptdljobs': ('AdaptDLJob', True, ['adljob'])},
    'apps': {'deployments': ('Deployment', True, ['deploy'])},
    'storage.k8s.io': {'storageclasses': ('StorageClass', False, ['sc'])},
}
JOB_PLURALS = {'tfjobs', 'pytorchjobs', 'frameworks', 'adaptdljobs'}
VERBS = ['create', 'delete', 'deletecollection', 'get', 'list']


def now_rfc3339():
    return datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def status_obj(code, reason, message):
    return {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
            'message': message, 'reason': reason, 'code': code}


def route_pattern(parts):
    """a request path's segments with namespaces and object names as {ns} and {name}"""
    out = list(parts)
    plurals = set(CORE) | {p for g in GROUPS.values() for p in g}
    for i, seg in enumerate(parts):
        if i > 0 and parts[i - 1] == 'namespaces' and i + 1 < len(parts):
            out[i] = '{ns}'
        elif i > 0 and parts[i - 1] in plurals and i == len(parts) - 1:
            out[i] = '{name}'
    return out


def parse_selector(sel):
    reqs = []
    for part in [p.strip() for p in (sel or '').split(',') if p.strip()]:
        m = re.match(r'^([^!=]+?)\s*(==|=|!=)\s*(.*)$', part)
        if m:
            reqs.append((m.group(1), m.group(2), m.group(3)))
        elif part.startswith('!'):
            reqs.append((part[1:], '!', None))
        else:
            reqs.append((part, 'exists', None))
    return reqs


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch of the dict target, in place: null removes a key."""
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        elif isinstance(v, dict) and isinstance(target.get(k), dict):
            merge_patch(target[k], v)
        elif isinstance(v, dict):
            target[k] = {}
            merge_patch(target[k], v)
        else:
            target[k] = v


def selector_matches(reqs, labels):
    labels = labels or {}
    for k, op, v in reqs:
        if op in ('=', '==') and labels.get(k) != v:
            return False
        if op == '!=' and labels.get(k) == v:
            return False
        if op == 'exists' and k not in labels:
            return False
        if op == '!' and k in labels:
            return False
    return True


class Pod:
    """One replica: a local process in its own mount namespace."""

    def __init__(self, server, job, role, index, podspec):
        self.server, self.job, self.role, self.index, self.spec = server, job, role, index, podspec
        self.proc = None
        self.exit = None
        self.error = None
        self.dir = tempfile.mkdtemp(prefix='pod-', dir=server.state_dir)

    def volumes(self):
        vols = {}
        for v in self.spec.get('volumes') or []:
            vols[v.get('name')] = v
        return vols

    def build(self):
        """-> (argv, env) or raises RuntimeError (like a pod stuck in ContainerCreating)."""
        c = (self.spec.get('containers') or [{}])[0]
        cmd = list(c.get('command') or []) + list(c.get('args') or [])
        if not cmd:
            raise RuntimeError('container has neither command nor args')
        vols = self.volumes()
        binds = []
        for m in c.get('volumeMounts') or []:
            v = vols.get(m.get('name'))
            if v is None:
                raise RuntimeError('volumeMount %s names no volume' % m.get('name'))
            path = m.get('mountPath')
            if 'nfs' in v:
                key = '%s:%s' % (v['nfs'].get('server'), v['nfs'].get('path'))
                local = self.server.nfs.get(key)
                if not local:
                    raise RuntimeError('MountVolume.SetUp failed: nfs %s is not exported' % key)
                binds.append((local, path))
            elif 'emptyDir' in v:
                d = os.path.join(self.dir, 'empty-' + v['name'])
                os.makedirs(d, exist_ok=True)
                if v['name'] == 'frameworkbarrier-volume':
                    # the frameworkbarrier init container writes the peers' addresses
                    with open(os.path.join(d, 'injector.sh'), 'w') as f:
                        f.write('export FB_FRAMEWORK_NAME=%s\n' % self.job['metadata']['name'])
                binds.append((d, path))
            elif 'configMap' in v:
                cm = self.server.get_obj('', 'configmaps', self.job['metadata'].get('namespace', 'default'),
                                         v['configMap'].get('name'))
                if cm is None:
                    raise RuntimeError('configmap %s not found' % v['configMap'].get('name'))
                key = m.get('subPath')
                if key:
                    f = os.path.join(self.dir, 'cm-' + key)
                    with open(f, 'w') as fh:
                        fh.write((cm.get('data') or {}).get(key, ''))
                    os.chmod(f, v['configMap'].get('defaultMode', 0o644) & 0o777)
                    cmd = [f if x == path else x for x in cmd]
            elif 'azureFile' in v:
                af = v['azureFile']
                ns = self.job['metadata'].get('namespace', 'default')
                sec = self.server.get_obj('', 'secrets', ns, af.get('secretName'))
                data = (sec or {}).get('data') or {}
                if 'azurestorageaccountname' not in data or 'azurestorageaccountkey' not in data:
                    raise RuntimeError('MountVolume.SetUp failed: secret %s has no azure storage account'
                                       % af.get('secretName'))
                local = self.server.azure.get(af.get('shareName'))
                if not local:
                    raise RuntimeError('MountVolume.SetUp failed: azure file share %s does not exist'
                                       % af.get('shareName'))
                binds.append((local, path))
            # persistentVolumeClaim: the claim must exist; its content is not used
            elif 'persistentVolumeClaim' in v:
                name = v['persistentVolumeClaim'].get('claimName')
                ns = self.job['metadata'].get('namespace', 'default')
                if self.server.get_obj('', 'persistentvolumeclaims', ns, name) is None:
                    raise RuntimeError('persistentvolumeclaim %s not found' % name)
        ns = self.job['metadata'].get('namespace', 'default')
        for ps in self.spec.get('imagePullSecrets') or []:
            sec = self.server.get_obj('', 'secrets', ns, ps.get('name'))
            if sec is None or sec.get('type') != 'kubernetes.io/dockerconfigjson' or \
                    '.dockerconfigjson' not in (sec.get('data') or {}):
                raise RuntimeError('ErrImagePull: imagePullSecret %s is missing or not a dockerconfigjson'
                                   % ps.get('name'))
        env = dict(os.environ)
        for e in c.get('env') or []:
            env[e['name']] = str(e.get('value', ''))
        env['HOSTNAME'] = '%s-%s-%d' % (self.job['metadata']['name'], self.role.lower(), self.index)
        script = ['set -e']
        for local, path in binds:
            script.append('mkdir -p %s' % shq(path))
            script.append('mount --bind %s %s' % (shq(local), shq(path)))
        script.append('set +e')
        script.append('exec ' + ' '.join(shq(x) for x in cmd))
        return ['unshare', '-m', '--propagation', 'private', 'sh', '-c', '\n'.join(script)], env

    def start(self):
        argv, env = self.build()
        log = open(os.path.join(self.dir, 'container.log'), 'wb')
        self.proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.dir)
        log.close()

    def poll(self):
        if self.proc and self.exit is None:
            rc = self.proc.poll()
            if rc is not None:
                self.exit = rc
        return self.exit

    def kill(self):
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            deadline = time.time() + 3
            while time.time() < deadline and self.proc.poll() is None:
                time.sleep(0.05)
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
        if self.proc:
            # the whole process group, also children that outlived the container's main process
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def shq(s):
    return "'" + str(s).replace("'", "'\\''") + "'"


class Cluster:
    def __init__(self, args):
        self.lock = threading.RLock()
        self.objects = {}   # (group, plural, ns, name) -> obj
        self.pods = {}      # (group, plural, ns, name) -> [Pod]
        self.jobstate = {}  # key -> dict(phase, t)
        self.creates = {}
        self.create_calls = 0
        self.requests = 0
        self.failed = 0
        self.routes = {}    # "VERB /path pattern" -> requests
        self.times = {}     # job name -> {created, running, done}: unix seconds
        self.sim_run = args.sim_run
        self.sim_metrics = args.sim_metrics
        self.fail_mode = None
        self.continue_ttl = args.continue_ttl
        self.deny_list = False  # POST /_test/deny: RBAC without the list verb
        self.continues = {}  # continue token -> {'t': first chunk's time, 'items': the rest of the snapshot}
        self.lists = self.continued = self.expired = 0
        self.list_items = []
        self.fail_until = 0
        self.fail_delay = 0
        self.fail_count = None  # requests the fault is still served to (None: until fail_until)
        self.fault_served = 0   # requests that met the fault set last
        self.state_dir = args.state_dir
        self.nfs = {}
        for m in args.nfs or []:
            k, _, d = m.partition('=')
            self.nfs[k] = d
        self.azure = {}
        for m in args.azure or []:
            k, _, d = m.partition('=')
            self.azure[k] = d
        self.crd = {'kubeflow.org': ['v1'], 'frameworkcontroller.microsoft.com': ['v1'],
                    'adaptdl.petuum.com': ['v1'], 'apps': ['v1'], 'storage.k8s.io': ['v1', 'v1beta1']}
        for c in args.crd or []:
            g, _, vs = c.partition('=')
            self.crd[g] = vs.split(',')
        for g in args.no_crd or []:
            self.crd.pop(g, None)
        self.start_delay = args.start_delay
        self.rv = 1
        self.add_obj('storage.k8s.io', 'storageclasses', None,
                     {'apiVersion': 'storage.k8s.io/v1', 'kind': 'StorageClass',
                      'metadata': {'name': 'hostpath'}, 'provisioner': 'microk8s.io/hostpath'})

    # ---- store ----
    def get_obj(self, group, plural, ns, name):
        with self.lock:
            return self.objects.get((group, plural, ns, name))

    def add_obj(self, group, plural, ns, obj):
        md = obj.setdefault('metadata', {})
        md['uid'] = str(uuid.uuid4())
        md['creationTimestamp'] = now_rfc3339()
        self.rv += 1
        md['resourceVersion'] = str(self.rv)
        if ns:
            md['namespace'] = ns
        self.objects[(group, plural, ns, md['name'])] = obj

    def delete_obj(self, key):
        obj = self.objects.pop(key, None)
        if obj is None:
            return None
        for p in self.pods.pop(key, []):
            threading.Thread(target=p.kill, daemon=True).start()
        self.jobstate.pop(key, None)
        # garbage collection of dependents
        uid = obj['metadata'].get('uid')
        for k, o in list(self.objects.items()):
            for ref in o.get('metadata', {}).get('ownerReferences') or []:
                if ref.get('uid') == uid:
                    self.delete_obj(k)
                    break
        if key[1] in JOB_PLURALS:
            for k, o in list(self.objects.items()):
                if k[1] == 'pods' and (o['metadata'].get('labels') or {}).get('trialq-test/job') == key[3]:
                    self.objects.pop(k, None)
        return obj

    # ---- the controllers ----
    def tick(self):
        with self.lock:
            for key, obj in list(self.objects.items()):
                if key[1] in JOB_PLURALS:
                    try:
                        self.advance(key, obj)
                    except Exception as e:  # a controller bug must show, not kill the thread
                        print('controller error for %s: %r' % (key, e), file=sys.stderr, flush=True)

    def replicas(self, key, obj):
        spec = obj.get('spec') or {}
        out = []
        if key[1] in ('tfjobs', 'pytorchjobs'):
            rs = spec.get('tfReplicaSpecs') or spec.get('pytorchReplicaSpecs') or {}
            for role, r in rs.items():
                for i in range(int(r.get('replicas', 1))):
                    out.append((role, i, (r.get('template') or {}).get('spec') or {}))
        elif key[1] == 'frameworks':
            for tr in spec.get('taskRoles') or []:
                for i in range(int(tr.get('taskNumber', 1))):
                    out.append((tr.get('name'), i, ((tr.get('task') or {}).get('pod') or {}).get('spec') or {}))
        else:
            out.append(('main', 0, (spec.get('template') or {}).get('spec') or {}))
        return out

    def set_phase(self, key, obj, phase, ok=None, message=None):
        st = obj.setdefault('status', {})
        t = now_rfc3339()
        if key[1] in ('tfjobs', 'pytorchjobs'):
            conds = st.setdefault('conditions', [])
            for c in conds:
                c['status'] = 'False'
            ctype = {'created': 'Created', 'running': 'Running', 'done': 'Succeeded' if ok else 'Failed'}[phase]
            cond = {'type': ctype, 'status': 'True', 'reason': 'TrialqTest' + ctype, 'lastUpdateTime': t,
                    'lastTransitionTime': t, 'message': message or ('job %s' % ctype.lower())}
            conds.append(cond)
            if phase == 'running':
                st['startTime'] = t
            if phase == 'done':
                st['completionTime'] = t
        elif key[1] == 'frameworks':
            if phase == 'created':
                st['state'] = 'AttemptCreationPending'
            elif phase == 'preparing':
                st['state'] = 'AttemptPreparing'
            elif phase == 'running':
                st['state'] = 'AttemptRunning'
                st['startTime'] = t
            else:
                st['state'] = 'Completed'
                st['completionTime'] = t
                st['attemptStatus'] = {'completionStatus': {
                    'type': {'name': 'Succeeded' if ok else 'Failed'}, 'diagnostics': message or ''}}
            st['transitionTime'] = t
        else:
            st['phase'] = {'created': 'Pending', 'running': 'Running',
                           'done': 'Succeeded' if ok else 'Failed'}[phase]
            if phase == 'done':
                st['completionTimestamp'] = t
                if not ok:
                    st['message'] = message or 'a replica failed'
        self.rv += 1
        obj['metadata']['resourceVersion'] = str(self.rv)

    def pod_objects(self, key, obj, pods):
        ns = key[2]
        for p in pods:
            name = '%s-%s-%d' % (key[3], str(p.role).lower(), p.index)
            labels = {'trialq-test/job': key[3]}
            if key[1] == 'adaptdljobs':
                labels['adaptdl/job'] = key[3]
            state = {'running': {'startedAt': now_rfc3339()}}
            if p.exit is not None:
                state = {'terminated': {'exitCode': p.exit, 'finishedAt': now_rfc3339()}}
            elif p.error:
                state = {'waiting': {'reason': 'ContainerCreating', 'message': p.error}}
            pod = {'apiVersion': 'v1', 'kind': 'Pod',
                   'metadata': {'name': name, 'namespace': ns, 'labels': labels,
                                'creationTimestamp': now_rfc3339(), 'uid': str(uuid.uuid5(uuid.NAMESPACE_DNS, name))},
                   'spec': p.spec,
                   'status': {'phase': 'Running' if p.exit is None else ('Succeeded' if p.exit == 0 else 'Failed'),
                              'containerStatuses': [{'name': 'main', 'state': state}]}}
            self.objects[('', 'pods', ns, name)] = pod

    def local_path(self, spec, path):
        """the local file at path in a container of pod spec (its nfs or azureFile volume),
        or None"""
        c = (spec.get('containers') or [{}])[0]
        vols = {v.get('name'): v for v in spec.get('volumes') or []}
        for m in c.get('volumeMounts') or []:
            mp = (m.get('mountPath') or '').rstrip('/')
            v = vols.get(m.get('name')) or {}
            if not mp or not path.startswith(mp + '/'):
                continue
            if 'nfs' in v:
                local = self.nfs.get('%s:%s' % (v['nfs'].get('server'), v['nfs'].get('path')))
            elif 'azureFile' in v:
                local = self.azure.get(v['azureFile'].get('shareName'))
            else:
                local = None
            if local:
                return local + path[len(mp):]
        return None

    def sim_finish(self, key, obj):
        """--sim-run: writes what the trial of the job's first replica would have (see the
        docstring); a missing script is the job's failure."""
        role, _, spec = self.replicas(key, obj)[0]
        c = (spec.get('containers') or [{}])[0]
        script = None
        for a in list(c.get('command') or []) + list(c.get('args') or []):
            if str(a).endswith('.sh'):
                script = self.local_path(spec, str(a))
        if not script or not os.path.isfile(script):
            return 'no launch script on the shared storage for %s' % role
        env = {}
        with open(script) as f:
            for line in f:
                if line.startswith('export '):
                    k, _, v = line[7:].strip().partition('=')
                    env[k] = (shlex.split(v) or [''])[0]
        sys_dir = self.local_path(spec, env.get('NNI_SYS_DIR', ''))
        out_dir = self.local_path(spec, env.get('NNI_OUTPUT_DIR', ''))
        if not sys_dir or not out_dir:
            return 'the launch script of %s names no NNI_SYS_DIR/NNI_OUTPUT_DIR on the share' % role
        try:
            with open(os.path.join(sys_dir, 'parameter.cfg')) as f:
                pid = json.load(f).get('parameter_id')
        except (OSError, ValueError):
            pid = None
        os.makedirs(os.path.join(sys_dir, '.nni'), exist_ok=True)
        os.makedirs(out_dir, exist_ok=True)
        recs = [('PERIODICAL', i, 0.5 + i) for i in range(self.sim_metrics)] + [('FINAL', 0, 0.25)]
        with open(os.path.join(sys_dir, '.nni', 'metrics'), 'a') as f:
            for typ, seq, val in recs:
                rec = json.dumps({'parameter_id': pid, 'trial_job_id': env.get('NNI_TRIAL_JOB_ID'), 'type': typ,
                                  'sequence': seq, 'value': json.dumps(val)}, separators=(',', ':')) + '\n'
                f.write('ME%06d%s' % (len(rec.encode()), rec))
        with open(os.path.join(out_dir, 'exitcode'), 'w') as f:
            f.write('0\n')
        return None

    def advance(self, key, obj):
        js = self.jobstate.setdefault(key, {'phase': 'new', 't': time.time()})
        now = time.time()
        if js['phase'] == 'new':
            self.set_phase(key, obj, 'created')
            js.update(phase='created', t=now)
            self.times[key[3]] = {'created': now}
        elif js['phase'] == 'created' and self.sim_run is not None and now - js['t'] >= self.start_delay:
            self.set_phase(key, obj, 'running')
            js.update(phase='running', t=now, sim=True)
            self.times.setdefault(key[3], {})['running'] = now
        elif js.get('sim') and js['phase'] == 'running':
            if now - js['t'] >= self.sim_run:
                why = self.sim_finish(key, obj)
                self.set_phase(key, obj, 'done', why is None, why)
                js.update(phase='done', t=now)
                self.times.setdefault(key[3], {})['done'] = now
        elif js['phase'] == 'created' and now - js['t'] >= self.start_delay:
            if key[1] == 'frameworks' and js.get('prep') is None:
                self.set_phase(key, obj, 'preparing')
                js['prep'] = now
                return
            pods = []
            try:
                for role, i, spec in self.replicas(key, obj):
                    pods.append(Pod(self, obj, role, i, spec))
                for p in pods:
                    p.build()
            except RuntimeError as e:
                # like a pod that cannot start: the job stays pending, the reason on the pod
                for p in pods:
                    p.error = str(e)
                self.pod_objects(key, obj, pods)
                js['t'] = now
                return
            for p in pods:
                p.start()
            self.pods[key] = pods
            self.pod_objects(key, obj, pods)
            self.set_phase(key, obj, 'running')
            js.update(phase='running', t=now)
            self.times.setdefault(key[3], {})['running'] = now
        elif js['phase'] == 'running':
            pods = self.pods.get(key, [])
            codes = [p.poll() for p in pods]
            failed = [c for c in codes if c not in (None, 0)]
            # tf-operator: the job succeeds when its chief/master (else all workers) did,
            # parameter servers are then stopped; pytorch-operator: when the master did
            roles = {str(p.role) for p in pods}
            decisive = [p for p in pods if str(p.role) in ('Chief', 'Master')] or \
                [p for p in pods if str(p.role) == 'Worker'] if key[1] in ('tfjobs', 'pytorchjobs') else []
            if not decisive or roles == {'Worker'}:
                decisive = pods
            if failed or all(p.poll() is not None for p in decisive):
                for p in pods:
                    if p.poll() is None:
                        threading.Thread(target=p.kill, daemon=True).start()
                ok = not failed
                self.pod_objects(key, obj, pods)
                self.set_phase(key, obj, 'done', ok, None if ok else 'replica exited with code %d' % failed[0])
                js.update(phase='done', t=now)
                self.times.setdefault(key[3], {})['done'] = now

    def shutdown(self):
        with self.lock:
            for pods in self.pods.values():
                for p in pods:
                    p.kill()


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'trialq-k8s-test'
    # TCP_NODELAY: the head and the body are two writes; with Nagle's algorithm and the
    # client's delayed ACK each answer on a kept-alive connection would wait ~40 ms
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write('%s %s\n' % (self.command, fmt % args))

    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        # read once, before any answer: an unread body would be taken for the next request
        if getattr(self, '_body', None) is None:
            n = int(self.headers.get('Content-Length') or 0)
            self._body = self.rfile.read(n) if n else b''
        return self._body

    def auth(self):
        """-> user name, or None after answering 401/403."""
        h = self.headers.get('Authorization') or ''
        cfg = self.server.args
        if h.startswith('Bearer '):
            tok = h[7:].strip()
            if tok in (cfg.forbidden_token or []):
                self.send_json(403, status_obj(403, 'Forbidden', 'user "restricted" cannot %s resource in API group '
                                               'at the cluster scope' % self.command.lower()))
                return None
            if tok in (cfg.token or []):
                return 'token-user'
            self.send_json(401, status_obj(401, 'Unauthorized', 'Unauthorized'))
            return None
        try:
            cert = self.connection.getpeercert()
        except (AttributeError, ValueError):
            cert = None
        if cert:
            for rdn in cert.get('subject', ()):
                for k, v in rdn:
                    if k == 'commonName':
                        return v
            return 'cert-user'
        self.send_json(401, status_obj(401, 'Unauthorized', 'Unauthorized'))
        return None

    def inject(self):
        """Failure injection; True when the request was consumed."""
        c = self.server.cluster
        with c.lock:
            mode = c.fail_mode if time.time() < c.fail_until and c.fail_count != 0 else None
            delay = c.fail_delay
            if not mode:
                return False
            c.failed += 1
            c.fault_served += 1
            if c.fail_count is not None:
                c.fail_count -= 1
        if mode == '5xx':
            self.send_json(503, status_obj(503, 'ServiceUnavailable', 'the server is currently unable to handle '
                                           'the request (injected)'))
            return True
        if mode == '429':
            body = json.dumps(status_obj(429, 'TooManyRequests', 'Too many requests, please try again later. '
                                         '(injected)')).encode()
            self.send_response(429)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Retry-After', str(max(1, int(delay + 0.999))))
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return True
        if mode == 'slow':
            time.sleep(delay)
            return False
        if mode in ('drop', 'hang'):
            if mode == 'hang':
                time.sleep(delay)
            self.body()
            self.close_connection = True
            try:
                self.connection.shutdown(2)
            except OSError:
                pass
            return True
        return False

    def do_GET(self):
        self.route('GET')

    def do_POST(self):
        self.route('POST')

    def do_DELETE(self):
        self.route('DELETE')

    def do_PUT(self):
        self.route('PUT')

    def do_PATCH(self):
        self.route('PATCH')

    def route(self, method):
        self._body = None
        self.body()
        u = urlsplit(self.path)
        q = parse_qs(u.query)
        parts = [p for p in u.path.split('/') if p]
        c = self.server.cluster
        if parts[:1] == ['_test']:
            return self.test_hook(method, parts[1:])
        route = '%s /%s' % (method, '/'.join(route_pattern(parts)))
        with c.lock:
            c.requests += 1
            c.routes[route] = c.routes.get(route, 0) + 1
        if self.inject():
            return
        self.who = self.auth()
        if self.who is None:
            return
        if parts == ['version']:
            return self.send_json(200, {'major': '1', 'minor': '27', 'gitVersion': 'v1.27.0-trialq-test',
                                        'platform': 'linux/amd64', 'goVersion': 'go1.20'})
        if parts == ['api']:
            return self.send_json(200, {'kind': 'APIVersions', 'versions': ['v1'], 'serverAddressByClientCIDRs': [
                {'clientCIDR': '0.0.0.0/0', 'serverAddress': self.server.addr}]})
        if parts == ['api', 'v1']:
            return self.send_json(200, self.resource_list('v1', CORE))
        if parts == ['apis']:
            return self.send_json(200, {'kind': 'APIGroupList', 'apiVersion': 'v1',
                                        'groups': [self.group_obj(g) for g in sorted(c.crd)]})
        if len(parts) == 2 and parts[0] == 'apis':
            if parts[1] not in c.crd:
                return self.send_json(404, status_obj(404, 'NotFound', 'the server could not find the requested '
                                                      'resource'))
            return self.send_json(200, self.group_obj(parts[1]))
        if len(parts) == 3 and parts[0] == 'apis':
            g, v = parts[1], parts[2]
            if v not in c.crd.get(g, []):
                return self.send_json(404, status_obj(404, 'NotFound', 'the server could not find the requested '
                                                      'resource'))
            return self.send_json(200, self.resource_list('%s/%s' % (g, v), GROUPS[g]))
        # resource paths
        if parts[:2] == ['api', 'v1']:
            group, version, rest, table = '', 'v1', parts[2:], CORE
        elif parts[:1] == ['apis'] and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
            if version not in c.crd.get(group, []):
                return self.send_json(404, status_obj(404, 'NotFound', 'the server could not find the requested '
                                                      'resource'))
            table = GROUPS[group]
        else:
            return self.send_json(404, status_obj(404, 'NotFound', 'the server could not find the requested resource'))
        ns = None
        if len(rest) >= 2 and rest[0] == 'namespaces' and len(rest) > 2:
            ns, rest = rest[1], rest[2:]
        if not rest or rest[0] not in table or len(rest) > 2:
            return self.send_json(404, status_obj(404, 'NotFound', 'the server could not find the requested resource'))
        plural, name = rest[0], (rest[1] if len(rest) == 2 else None)
        kind, namespaced, _ = table[plural]
        if namespaced and ns is None and (method != 'GET' or name):
            return self.send_json(404, status_obj(404, 'NotFound', 'the server could not find the requested resource'))
        api_version = '%s/%s' % (group, version) if group else 'v1'
        sel = parse_selector((q.get('labelSelector') or [''])[0])
        with c.lock:
            if method == 'GET' and name:
                obj = c.objects.get((group, plural, ns, name))
                if obj is None:
                    return self.send_json(404, status_obj(404, 'NotFound', '%s.%s "%s" not found' % (plural, group, name)
                                                          if group else '%s "%s" not found' % (plural, name)))
                return self.send_json(200, obj)
            if method == 'GET' and c.deny_list:
                return self.send_json(403, status_obj(403, 'Forbidden', '%s.%s is forbidden: User "%s" cannot list '
                                                      'resource "%s" in API group "%s" in the namespace "%s"' %
                                                      (plural, group, self.who, plural, group, ns)))
            if method == 'GET':
                try:
                    limit = int((q.get('limit') or ['0'])[0] or 0)
                except ValueError:
                    return self.send_json(400, status_obj(400, 'BadRequest', 'limit: not a number'))
                token = (q.get('continue') or [''])[0]
                now = time.time()
                for k in [k for k, v in c.continues.items() if now - v['t'] > c.continue_ttl]:
                    del c.continues[k]
                if token:
                    snap = c.continues.pop(token, None)
                    if snap is None:
                        c.expired += 1
                        return self.send_json(410, status_obj(
                            410, 'Expired', 'The provided continue parameter is too old to display a consistent '
                            'list result. You can start a new list without the continue parameter.'))
                    c.continued += 1
                    items, rv, first = snap['items'], snap['rv'], snap['t']
                else:
                    items = [o for k, o in sorted(c.objects.items(), key=lambda kv: kv[0][3])
                             if k[0] == group and k[1] == plural and (ns is None or k[2] == ns)
                             and selector_matches(sel, o['metadata'].get('labels'))]
                    rv, first = c.rv, now
                    if limit:
                        c.lists += 1
                        c.list_items = c.list_items[-99:] + [len(items)]
                md = {'resourceVersion': str(rv)}
                if limit and len(items) > limit:
                    # the rest is a snapshot as of the first chunk (copied: the objects change)
                    rest = items[limit:] if token else json.loads(json.dumps(items[limit:]))
                    nxt = base64.b64encode(json.dumps({'rv': rv, 'start': rest[0]['metadata']['name'],
                                                       'id': uuid.uuid4().hex}).encode()).decode()
                    c.continues[nxt] = {'t': first, 'items': rest, 'rv': rv}
                    md.update({'continue': nxt, 'remainingItemCount': len(rest)})
                    items = items[:limit]
                return self.send_json(200, {'kind': kind + 'List', 'apiVersion': api_version,
                                            'metadata': md, 'items': items})
            if method == 'POST' and not name:
                try:
                    obj = json.loads(self.body() or b'{}')
                except ValueError as e:
                    return self.send_json(400, status_obj(400, 'BadRequest', 'invalid JSON: %s' % e))
                md = obj.get('metadata') or {}
                oname = md.get('name')
                if not oname or not re.match(r'^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$', oname) or len(oname) > 253:
                    return self.send_json(422, status_obj(422, 'Invalid', '%s "%s" is invalid: metadata.name: a '
                                                          'lowercase RFC 1123 subdomain must consist of lower case '
                                                          'alphanumeric characters' % (kind, oname)))
                if obj.get('kind') not in (None, kind):
                    return self.send_json(400, status_obj(400, 'BadRequest', 'the kind %s does not match %s' %
                                                          (obj.get('kind'), kind)))
                if md.get('namespace') not in (None, ns):
                    return self.send_json(400, status_obj(400, 'BadRequest', 'the namespace of the object does '
                                                          'not match the namespace on the request'))
                if plural in JOB_PLURALS:
                    c.create_calls += 1
                key = (group, plural, ns if namespaced else None, oname)
                if key in c.objects:
                    return self.send_json(409, status_obj(409, 'AlreadyExists', '%s.%s "%s" already exists' %
                                                          (plural, group, oname) if group else
                                                          '%s "%s" already exists' % (plural, oname)))
                obj['apiVersion'] = api_version
                obj['kind'] = kind
                c.add_obj(group, plural, ns if namespaced else None, obj)
                if plural in JOB_PLURALS:
                    c.creates[oname] = c.creates.get(oname, 0) + 1
                    c.advance(key, obj)
                return self.send_json(201, obj)
            if method == 'PATCH' and name:
                ctype = (self.headers.get('Content-Type') or '').split(';')[0].strip()
                if ctype != 'application/merge-patch+json':
                    return self.send_json(415, status_obj(415, 'UnsupportedMediaType', 'the body of the request '
                                                          'was in an unknown format - accepted media types include: '
                                                          'application/json-patch+json, application/merge-patch+json, '
                                                          'application/apply-patch+yaml'))
                obj = c.objects.get((group, plural, ns, name))
                if obj is None:
                    return self.send_json(404, status_obj(404, 'NotFound', '%s "%s" not found' % (plural, name)))
                try:
                    patch = json.loads(self.body() or b'{}')
                except ValueError as e:
                    return self.send_json(400, status_obj(400, 'BadRequest', 'invalid JSON: %s' % e))
                if not isinstance(patch, dict) or \
                        (patch.get('metadata') or {}).get('name', name) != name:
                    return self.send_json(422, status_obj(422, 'Invalid', 'the patch may not change the name'))
                merge_patch(obj, patch)
                c.rv += 1
                obj['metadata']['resourceVersion'] = str(c.rv)
                return self.send_json(200, obj)
            if method == 'DELETE' and name:
                obj = c.delete_obj((group, plural, ns, name))
                if obj is None:
                    return self.send_json(404, status_obj(404, 'NotFound', '%s "%s" not found' % (plural, name)))
                return self.send_json(200, obj)
            if method == 'DELETE':
                gone = []
                for k, o in list(c.objects.items()):
                    if k[0] == group and k[1] == plural and (ns is None or k[2] == ns) \
                            and selector_matches(sel, o['metadata'].get('labels')):
                        c.delete_obj(k)
                        gone.append(o)
                return self.send_json(200, {'kind': kind + 'List', 'apiVersion': api_version,
                                            'metadata': {}, 'items': gone})
        return self.send_json(405, status_obj(405, 'MethodNotAllowed', '%s is not supported here' % method))

    def group_obj(self, g):
        vs = self.server.cluster.crd[g]
        gv = [{'groupVersion': '%s/%s' % (g, v), 'version': v} for v in vs]
        return {'kind': 'APIGroup', 'apiVersion': 'v1', 'name': g, 'versions': gv, 'preferredVersion': gv[0]}

    def resource_list(self, gv, table):
        res = []
        for plural, (kind, namespaced, short) in sorted(table.items()):
            res.append({'name': plural, 'singularName': kind.lower(), 'namespaced': namespaced, 'kind': kind,
                        'verbs': VERBS, 'shortNames': short})
        return {'kind': 'APIResourceList', 'apiVersion': 'v1', 'groupVersion': gv, 'resources': res}

    def test_hook(self, method, parts):
        c = self.server.cluster
        if parts == ['fail'] and method == 'POST':
            req = json.loads(self.body() or b'{}')
            with c.lock:
                c.fail_mode = req.get('mode')
                c.fail_count = int(req['count']) if 'count' in req else None
                c.fail_until = time.time() + float(req.get('seconds', 0 if c.fail_count is None else 1e9))
                c.fail_delay = float(req.get('delay', 0))
                c.fault_served = 0
            return self.send_json(200, {'ok': True})
        if parts == ['deny'] and method == 'POST':
            with c.lock:
                c.deny_list = bool(json.loads(self.body() or b'{}').get('list'))
            return self.send_json(200, {'ok': True})
        if parts == ['continue'] and method == 'POST':
            req = json.loads(self.body() or b'{}')
            with c.lock:
                c.continue_ttl = float(req.get('ttl', 300))
            return self.send_json(200, {'ok': True})
        if parts == ['stats']:
            with c.lock:
                return self.send_json(200, {'creates': dict(c.creates), 'create_calls': c.create_calls,
                                            'requests': c.requests, 'failed': c.failed, 'fault_served': c.fault_served,
                                            'lists': c.lists, 'continues': c.continued, 'expired': c.expired,
                                            'list_items': list(c.list_items),
                                            'routes': dict(c.routes)})
        if parts == ['jobtimes']:
            with c.lock:
                return self.send_json(200, {k: dict(v) for k, v in c.times.items()})
        if parts == ['objects']:
            with c.lock:
                return self.send_json(200, {'items': [dict(key=list(k), obj=o) for k, o in c.objects.items()]})
        return self.send_json(404, {'error': 'unknown test hook'})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--port', type=int, required=True)
    ap.add_argument('--tls-cert')
    ap.add_argument('--tls-key')
    ap.add_argument('--client-ca', help='accept client certificates signed by this CA')
    ap.add_argument('--token', action='append', help='an accepted bearer token')
    ap.add_argument('--forbidden-token', action='append', help='a token that authenticates but may do nothing')
    ap.add_argument('--nfs', action='append', help='SERVER:PATH=LOCALDIR: an NFS export and its local directory')
    ap.add_argument('--azure', action='append', help='SHARE=LOCALDIR: an Azure file share and its local directory')
    ap.add_argument('--crd', action='append', help='GROUP=V1,V2: the versions served for a group')
    ap.add_argument('--no-crd', action='append', help='GROUP: not installed')
    ap.add_argument('--start-delay', type=float, default=0.2, help='seconds from Created to Running')
    ap.add_argument('--sim-run', type=float, help='SECONDS: jobs run no process and succeed after this long')
    ap.add_argument('--sim-metrics', type=int, default=0, help='with --sim-run: PERIODICAL metrics per trial')
    ap.add_argument('--continue-ttl', type=float, default=300,
                    help='seconds a list continue token stays valid (then 410 Gone)')
    ap.add_argument('--state-dir', required=True)
    ap.add_argument('--verbose', action='store_true')
    args = ap.parse_args()
    os.makedirs(args.state_dir, exist_ok=True)
    cluster = Cluster(args)
    srv = ThreadingHTTPServer(('127.0.0.1', args.port), Handler)
    srv.daemon_threads = True
    srv.cluster, srv.args, srv.verbose = cluster, args, args.verbose
    srv.addr = '127.0.0.1:%d' % args.port
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        if args.client_ca:
            ctx.load_verify_locations(args.client_ca)
            ctx.verify_mode = ssl.CERT_OPTIONAL
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    stop = threading.Event()

    def controller():
        while not stop.is_set():
            cluster.tick()
            stop.wait(0.1)

    threading.Thread(target=controller, daemon=True).start()

    def on_term(sig, frame):
        stop.set()
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    print('k8s test server on %s://127.0.0.1:%d' % ('https' if args.tls_cert else 'http', args.port), flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    finally:
        cluster.shutdown()
        shutil.rmtree(os.path.join(args.state_dir, 'pods'), ignore_errors=True)


if __name__ == '__main__':
    main()

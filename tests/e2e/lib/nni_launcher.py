#!/usr/bin/env python3
"""A stand-in for NNI 3.0's experiment launcher (nni/experiment/launcher.py, used by the
Python API's Experiment.run() and by NNI's nnictl create/resume/view/stop), written from
its documented behaviour, not from NNI's code. It finds `nni_node` on the Python path and
starts its `node` exactly as NNI starts its manager:

    <nni_node>/node --max-old-space-size=4096 --trace-uncaught <nni_node>/main.js
        --port P --experiment-id ID --action create|resume|view --mode PLATFORM
        --experiments-directory DIR --log-level L --foreground false [--url-prefix U]
        --python-interpreter PY

with cwd the nni_node folder, in a new process group, its output appended to
DIR/ID/log/nnictl_{stdout,stderr}.log; then polls GET /check-status (a few tries, a second
apart), records the experiment in DIR/.experiment, and POSTs the config to /experiment.
Resume and view read the config from DIR/ID/db/nni.sqlite (the newest ExperimentProfile
row's params).

    nni_launcher.py create CONFIG.json PORT DIR [PREFIX]  -> prints "ID PID", manager runs on
    nni_launcher.py run CONFIG.json PORT DIR              -> Experiment.run(): create, wait
                                                             for the end, DELETE, wait
    nni_launcher.py resume|view ID PORT DIR               -> prints "ID PID"
    nni_launcher.py stop PORT PID                         -> DELETE /experiment, wait for PID
    nni_launcher.py sigterm PID                           -> NNI's nnictl stop: SIGTERM, wait
Exit 0 on success; 1 with the error on stderr.
"""
import json
import os
import random
import signal
import socket
import sqlite3
import string
import subprocess
import sys
import time
import urllib.error
import urllib.request

API = '/api/v1/nni'


def url(port, path, prefix=None):
    return 'http://localhost:%d%s%s%s' % (port, '/' + prefix if prefix else '', API, path)


def rest(method, port, path, body=None, prefix=None, timeout=20):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url(port, path, prefix), data=data, method=method)
    if data is not None:
        req.add_header('Content-Type', 'application/json')
    with urllib.request.urlopen(req, timeout=timeout) as r:
        text = r.read().decode()
        return json.loads(text) if text else None


def port_idle(port):
    s = socket.socket()
    s.settimeout(1)
    try:
        s.connect(('localhost', port))
    except OSError:
        return True
    finally:
        s.close()
    return False


def locked_registry(dirpath, update):
    """NNI's registry DIR/.experiment under its lock file .experiment.lock.<pid>."""
    path = os.path.join(dirpath, '.experiment')
    lock = '%s.lock.%d' % (path, os.getpid())
    for _ in range(200):
        held = [f for f in os.listdir(dirpath) if f.startswith('.experiment.lock.')
                and time.time() - os.path.getmtime(os.path.join(dirpath, f)) < 2]
        if not held:
            break
        time.sleep(0.05)
    fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    os.close(fd)
    try:
        reg = {}
        if os.path.exists(path):
            with open(path) as f:
                reg = json.load(f)
        update(reg)
        with open(path, 'w') as f:
            json.dump(reg, f, indent=4)
    finally:
        os.remove(lock)


def start_manager(action, exp_id, config, port, dirpath, prefix=None):
    if not port_idle(port):
        raise RuntimeError('Port %d is not idle' % port)
    import nni_node
    node_dir = nni_node.__path__[0]
    platform = config['trainingService']
    platform = 'hybrid' if isinstance(platform, list) else platform['platform']
    cmd = [os.path.join(node_dir, 'node'), '--max-old-space-size=4096', '--trace-uncaught',
           os.path.join(node_dir, 'main.js'),
           '--port', str(port), '--experiment-id', exp_id, '--action', action, '--mode', platform,
           '--experiments-directory', dirpath, '--log-level', config.get('logLevel', 'info'),
           '--foreground', 'false']
    if prefix:
        cmd += ['--url-prefix', prefix]
    cmd += ['--python-interpreter', sys.executable]
    log = os.path.join(dirpath, exp_id, 'log')
    os.makedirs(log, exist_ok=True)
    out = open(os.path.join(log, 'nnictl_stdout.log'), 'a')
    err = open(os.path.join(log, 'nnictl_stderr.log'), 'a')
    header = '-' * 80 + '\nExperiment %s start: %s\n' % (exp_id, time.ctime()) + '-' * 80 + '\n'
    out.write(header)
    err.write(header)
    out.flush()
    err.flush()
    proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=node_dir, preexec_fn=os.setpgrp)
    try:
        for i in range(10):
            try:
                rest('GET', port, '/check-status', prefix=prefix, timeout=5)
                break
            except (urllib.error.URLError, OSError):
                if i == 9:
                    raise
                time.sleep(1)
        start = int(time.time() * 1000)

        def add(reg):
            reg[exp_id] = {'id': exp_id, 'port': port, 'startTime': start, 'endTime': 'N/A',
                           'status': 'INITIALIZED', 'platform': platform,
                           'experimentName': config.get('experimentName'), 'tag': [], 'pid': proc.pid,
                           'webuiUrl': [], 'logDir': dirpath, 'prefixUrl': prefix}
        locked_registry(dirpath, add)
        rest('POST', port, '/experiment', config, prefix=prefix)
    except Exception:
        proc.kill()
        proc.wait()
        raise
    return proc


def profile_params(dirpath, exp_id):
    db = sqlite3.connect(os.path.join(dirpath, exp_id, 'db', 'nni.sqlite'))
    try:
        row = db.execute('SELECT params FROM ExperimentProfile ORDER BY revision DESC').fetchone()
    finally:
        db.close()
    if row is None:
        raise RuntimeError('no ExperimentProfile in nni.sqlite of %s' % exp_id)
    params = json.loads(row[0])
    for key in ('trialCodeDirectory', 'searchSpaceFile'):  # the client re-checks them
        if key in params and not os.path.exists(params[key]):
            raise RuntimeError('%s %s does not exist' % (key, params[key]))
    return params


def wait_pid(pid, secs):
    end = time.time() + secs
    while time.time() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # our own child: reap it
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.1)
    return False


def main(argv):
    cmd = argv[1]
    if cmd in ('create', 'run'):
        with open(argv[2]) as f:
            config = json.load(f)
        port, dirpath = int(argv[3]), os.path.abspath(argv[4])
        prefix = argv[5] if len(argv) > 5 else None
        exp_id = ''.join(random.sample(string.ascii_lowercase + string.digits, 8))
        proc = start_manager('create', exp_id, config, port, dirpath, prefix)
        print(exp_id, proc.pid, flush=True)
        if cmd == 'create':
            return 0
        while True:  # Experiment.run(): until the experiment ends
            status = rest('GET', port, '/check-status', prefix=prefix)['status']
            if status in ('DONE', 'STOPPED', 'ERROR'):
                break
            time.sleep(0.5)
        rest('DELETE', port, '/experiment', prefix=prefix)
        proc.wait(timeout=60)
        print(status, proc.returncode, flush=True)
        return 0
    if cmd in ('resume', 'view'):
        exp_id, port, dirpath = argv[2], int(argv[3]), os.path.abspath(argv[4])
        params = profile_params(dirpath, exp_id)
        proc = start_manager(cmd, exp_id, params, port, dirpath)
        print(exp_id, proc.pid, flush=True)
        return 0
    if cmd == 'stop':
        port, pid = int(argv[2]), int(argv[3])
        rest('DELETE', port, '/experiment')
        if not wait_pid(pid, 60):
            raise RuntimeError('manager %d did not exit within 60 s' % pid)
        return 0
    if cmd == 'sigterm':  # NNI's nnictl stop (kill_command): SIGTERM, up to 60 s
        pid = int(argv[2])
        os.kill(pid, signal.SIGTERM)
        if not wait_pid(pid, 60):
            raise RuntimeError('manager %d did not exit within 60 s of SIGTERM' % pid)
        return 0
    raise SystemExit(__doc__)


if __name__ == '__main__':
    try:
        sys.exit(main(sys.argv))
    except urllib.error.HTTPError as e:
        print('ERROR: HTTP %d: %s' % (e.code, e.read().decode()), file=sys.stderr)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 - the message is the result
        print('ERROR: %s' % e, file=sys.stderr)
        sys.exit(1)

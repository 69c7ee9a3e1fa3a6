"""What the test servers' self-tests (test_*_server.py) share: checks that print and
count, a server process started on a free port, waiting for a pid a job writes, and
running the checks in a temporary directory."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


class ServerProcess:
    """tests/servers/<script> with --port-file and --workdir tmp and args; its output in
    tmp/server.log."""

    def __init__(self, script, tmp, args):
        port_file = os.path.join(tmp, "port")
        self.log_path = os.path.join(tmp, "server.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, script), "--port-file", port_file,
                                      "--workdir", tmp, *args], stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(200):
            if os.path.exists(port_file) or self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(port_file):
            self.stop()
            sys.exit("%s did not start:\n%s" % (script, open(self.log_path).read()))
        self.port = int(open(port_file).read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait()
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def server_log(tmp):
    """what the server started in tmp wrote"""
    path = os.path.join(tmp, "server.log")
    if not os.path.exists(path):
        return ""
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def run_checks(prefix, body):
    """body(tmp) in a new temporary directory, removed after; on a failed check the end of
    the log of the server started in tmp is shown; exits 1 when a check failed"""
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        body(tmp)
    finally:
        if failures:
            sys.stderr.write("server log:\n" + server_log(tmp)[-4000:])
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    sys.exit(1 if failures else 0)


def wait_pid(path, timeout=5):
    """the pid a job's command wrote into path"""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path) and open(path).read().strip():
            return int(open(path).read())
        time.sleep(0.05)
    return -1

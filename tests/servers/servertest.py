"""What the test servers' self-tests (test_*_server.py) share: checks that print and
count, a server process started on a free port, and waiting for a pid a job writes."""
import os
import subprocess
import sys
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


def wait_pid(path, timeout=5):
    """the pid a job's command wrote into path"""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path) and open(path).read().strip():
            return int(open(path).read())
        time.sleep(0.05)
    return -1

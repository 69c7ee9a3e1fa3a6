#!/usr/bin/python3
"""The OpenPAI test server's no-process mode (pai_server.py --sim-run): a job is RUNNING
for that long without a process, then SUCCEEDED with the trial's FINAL metric
(ME-framed .nni/metrics, its payload the trial's) and end state (.nni/state with the
attempt of its run.sh) in its NNI_SYS_DIR on the storage; a job stopped while it runs
ends STOPPED with nothing written; a command naming no NNI_SYS_DIR fails the job; the
requests are counted by verb and path pattern.

usage: test_pai_server.py
"""
import http.client
import json
import os
import time

from servertest import ServerProcess, check, run_checks

MOUNT = "/mnt/pai-sim-test"


class Server(ServerProcess):
    def __init__(self, tmp):
        self.store = os.path.join(tmp, "store")
        os.makedirs(self.store)
        super().__init__("pai_server.py", tmp, ["--token", "tok:alice", "--local-mount", self.store,
                                                "--container-mount", MOUNT, "--sim-run", "0.6",
                                                "--start-delay", "0.05"])

    def request(self, method, path, body=None, ctype="text/yaml"):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            h = {"Authorization": "Bearer tok"}
            if body is not None:
                h["Content-Type"] = ctype
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            raw = r.read()
            return r.status, (json.loads(raw) if raw else None)
        finally:
            c.close()

    def submit(self, name, command):
        proto = {"protocolVersion": 2, "name": name, "type": "job",
                 "taskRoles": {"nni": {"instances": 1, "commands": [command]}}}
        return self.request("POST", "/rest-server/api/v2/jobs", json.dumps(proto).encode())  # JSON is YAML

    def state(self, name):
        return self.request("GET", "/rest-server/api/v2/jobs/alice~" + name)[1]["jobStatus"]["state"]

    def wait_state(self, name, want, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            s = self.state(name)
            if s in want:
                return s
            time.sleep(0.05)
        return self.state(name)


def trial_dir(srv, trial, attempt):
    d = os.path.join(srv.store, "exp1", trial)
    os.makedirs(d)
    with open(os.path.join(d, "parameter.cfg"), "w") as f:
        f.write('{"parameter_id": 7, "parameter_source": "algorithm", "parameters": {"x": 1}}')
    with open(os.path.join(d, "run.sh"), "w") as f:
        f.write('eval "$1"\nrc=$?\necho "$rc $(date +%%s%%3N) 0 %d" > "$NNI_SYS_DIR/.nni/state.tmp" &&'
                ' mv -f "$NNI_SYS_DIR/.nni/state.tmp" "$NNI_SYS_DIR/.nni/state"\n' % attempt)
    cmd = ("export NNI_PLATFORM=pai NNI_SYS_DIR='%s/exp1/%s' NNI_OUTPUT_DIR='%s/exp1/%s/nnioutput' "
           "NNI_TRIAL_JOB_ID='%s' NNI_EXP_ID='exp1' && bash '%s/exp1/%s/run.sh' 'touch ran'"
           % (MOUNT, trial, MOUNT, trial, trial, MOUNT, trial))
    return d, cmd


def body(tmp):
    srv = Server(tmp)
    try:
        d, cmd = trial_dir(srv, "tr1", 2)
        check(srv.submit("job1", cmd)[0] == 202, "a job is accepted")
        check(srv.wait_state("job1", ("RUNNING", "SUCCEEDED", "FAILED"), 5) == "RUNNING", "it runs (no process)")
        check(not os.path.exists(os.path.join(d, ".nni", "metrics")), "nothing is written while it runs")
        t0 = time.time()
        check(srv.wait_state("job1", ("SUCCEEDED", "FAILED")) == "SUCCEEDED", "then it succeeds")
        check(time.time() - t0 > 0.2, "after about --sim-run seconds")
        raw = open(os.path.join(d, ".nni", "metrics"), "rb").read()
        check(raw[:2] == b"ME" and int(raw[2:8]) == len(raw) - 8, "one ME-framed record: %r" % raw)
        rec = json.loads(raw[8:])
        check(rec == {"parameter_id": 7, "trial_job_id": "tr1", "type": "FINAL", "sequence": 0, "value": "0.25"},
              "the record is the trial's FINAL metric: %r" % rec)
        st = open(os.path.join(d, ".nni", "state")).read().split()
        check(len(st) == 4 and st[0] == "0" and st[2] == "0" and st[3] == "2" and abs(int(st[1]) / 1000 - time.time()) < 10,
              ".nni/state is exit 0, the end time and run.sh's attempt: %r" % st)
        check(not os.path.exists(os.path.join(d, "ran")) and not os.path.exists(os.path.join(tmp, "ran")),
              "the command did not run")

        d2, cmd2 = trial_dir(srv, "tr2", 1)
        srv.submit("job2", cmd2)
        srv.wait_state("job2", ("RUNNING",), 5)
        code, _ = srv.request("PUT", "/rest-server/api/v2/jobs/alice~job2/executionType",
                              json.dumps({"value": "STOP"}).encode(), "application/json")
        check(code == 202, "STOP is accepted")
        check(srv.wait_state("job2", ("STOPPED", "SUCCEEDED", "FAILED")) == "STOPPED", "a stopped job ends STOPPED")
        check(not os.path.exists(os.path.join(d2, ".nni", "state")), "and writes no end state")

        srv.submit("job3", "echo no environment")
        check(srv.wait_state("job3", ("SUCCEEDED", "FAILED")) == "FAILED", "a command without NNI_SYS_DIR fails")

        stats = srv.request("GET", "/_test/stats")[1]
        r = stats["routes"]
        check(r.get("POST /rest-server/api/v2/jobs") == 3, "3 submits counted: %r" % r)
        check(r.get("GET /rest-server/api/v2/jobs/{user}~{name}", 0) >= 6, "the gets counted under one pattern")
        check(r.get("PUT /rest-server/api/v2/jobs/{user}~{name}/executionType") == 1, "the stop counted")
        check(sum(r.values()) == stats["calls"], "every call is in one route")
    finally:
        srv.stop()


run_checks("test-pai-server-", body)

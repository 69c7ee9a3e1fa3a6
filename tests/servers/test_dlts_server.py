#!/usr/bin/python3
"""The DLTS test server (dlts_server.py): the email/password query authentication and
its refusals, the team's view of a cluster (metadata's first key is the GPU type), a
submission as NNI makes it walking unapproved, queued, scheduling, running, finished
with its output on the shared filesystem, strict submission checks (nothing created), a
failing command, GPU limits that keep a job queued, kill (killing at once, then killed,
the process gone), pause and resume, the endpoints' port rules, the job list a client
finds its job in by name, injected faults (scheduled and at random) and odd input.

usage: test_dlts_server.py
"""
import hashlib
import http.client
import json
import os
import time
import urllib.parse

from servertest import ServerProcess, check, run_checks, server_log, wait_pid

EMAIL, MASTER, TEAM, CLUSTER = "alice@example.com", "m4ster-t0ken", "nni", "gpu-c1"
SHARED = "/mnt/dlts-test-share"


def password(email=EMAIL, master=MASTER):
    return hashlib.md5(("%s:%s" % (email, master)).encode()).hexdigest()


class Server(ServerProcess):
    def __init__(self, tmp, *more):
        self.share = os.path.join(tmp, "share")
        os.makedirs(self.share, exist_ok=True)
        super().__init__("dlts_server.py", tmp, [
            "--master-token", MASTER, "--user", EMAIL + ":" + TEAM + ",other", "--user", "bob@example.com:nni",
            "--cluster", CLUSTER + ":P100:2:2", "--cluster", "cpu-c2:None:0", "--mount", SHARED + ":" + self.share,
            "--state-seconds", "0.1", "--kill-grace", "1", *more])

    def request(self, method, path, body=None, auth=True, email=EMAIL, pw=None, ctype="application/json"):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            if auth:
                path += ("&" if "?" in path else "?") + urllib.parse.urlencode(
                    {"email": email, "password": pw if pw is not None else password(email)})
            h = {}
            if body is not None:
                body = body if isinstance(body, bytes) else json.dumps(body).encode()
                h["Content-Type"] = ctype
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            raw = r.read().decode()
            try:
                out = json.loads(raw)
            except ValueError:
                out = raw
            return r.status, out, r.getheader("Content-Type", "")
        finally:
            c.close()

    def submit(self, cmd, name="nni_exp_e1_trial_t1", **more):
        b = nni_job(cmd, name)
        b.update(more)
        return self.request("POST", "/api/clusters/%s/jobs" % CLUSTER, b)

    def job(self, job_id):
        return self.request("GET", "/api/v2/clusters/%s/jobs/%s" % (CLUSTER, job_id))[1]

    def wait(self, job_id, states, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            j = self.job(job_id)
            if j.get("jobStatus") in states:
                return j
            time.sleep(0.05)
        return self.job(job_id)

    def history(self, job_id):
        return self.request("GET", "/_test/job/" + job_id, auth=False)[1]


def nni_job(cmd, name):
    """the body NNI v2.3's DLTS training service posts"""
    return {"jobName": name, "resourcegpu": 1, "image": "msranni/nni:latest", "cmd": cmd, "interactivePorts": [],
            "team": TEAM, "vcName": TEAM, "userName": EMAIL, "gpuType": "P100", "jobType": "training",
            "jobtrainingtype": "RegularJob", "ssh": False, "ipython": False, "tensorboard": False, "workPath": "",
            "enableworkpath": True, "dataPath": "", "enabledatapath": False, "jobPath": "", "enablejobpath": True,
            "mountpoints": [], "env": [{"name": "TMPDIR", "value": "$HOME/tmp"}], "hostNetwork": False,
            "useGPUTopology": False, "isPrivileged": False, "hostIPC": False, "preemptionAllowed": "False"}


def test_auth(srv):
    path = "/api/teams/%s/clusters/%s" % (TEAM, CLUSTER)
    code, out, ctype = srv.request("GET", path, pw="0" * 32)
    check(code == 403 and out == "Invalid token" and ctype.startswith("text/plain"),
          "a wrong password: 403 Invalid token (%s %r)" % (code, out))
    code, out, _ = srv.request("GET", path, pw=password(master="other"))
    check(code == 403 and out == "Invalid token", "the password of another master token: 403")
    code, out, _ = srv.request("GET", path, auth=False)
    check(code == 403 and out == "Forbidden", "no email and password: 403 Forbidden")
    code, out, _ = srv.request("GET", path + "?email=" + EMAIL, auth=False)
    check(code == 403, "an email without a password: 403")
    code, out, _ = srv.request("GET", path)
    check(code == 200, "the right password (md5 of email:master token): 200")
    code, out, _ = srv.request("GET", path, pw=password().upper())
    check(code == 200, "the password in upper-case hex: 200, as DLTS reads hex")


def test_cluster(srv):
    code, out, ctype = srv.request("GET", "/api/teams/%s/clusters/%s" % (TEAM, CLUSTER))
    meta = json.loads(out["metadata"]) if code == 200 and isinstance(out.get("metadata"), str) else {}
    check(code == 200 and ctype.startswith("application/json") and list(meta)[:1] == ["P100"],
          "the cluster's metadata: a JSON string whose first key is the GPU type (%s)" % out)
    check(json.loads(out["quota"]) == {"P100": 2} and out["gpu_capacity"] == {"P100": 2}, "its quota and capacity")
    code, out, _ = srv.request("GET", "/api/teams/%s/clusters/.default" % TEAM)
    check(code == 200 and list(json.loads(out["metadata"]))[0] == "P100", "cluster .default: the first cluster")
    code, out, _ = srv.request("GET", "/api/teams/%s/clusters/nope" % TEAM)
    check(code == 404 and out == "Cluster is not found", "an unknown cluster: 404 Cluster is not found")
    code, out, _ = srv.request("GET", "/api/teams/nope/clusters/%s" % CLUSTER)
    check(code == 404 and out == "Team is not found", "a team the user is not in: 404 Team is not found")
    code, out, _ = srv.request("GET", "/api/nothing/here")
    check(code == 404 and out == "Not Found", "an unknown route: 404")


def test_walk(srv):
    cmd = ("mkdir -p %s/e1/t1 && echo \"hello $DLWS_JOB_ID $CUDA_VISIBLE_DEVICES $TMPDIR\" > %s/e1/t1/out && sleep 0.4"
           % (SHARED, SHARED))
    code, out, ctype = srv.submit(cmd)
    job_id = out.get("jobId") if isinstance(out, dict) else None
    check(code == 200 and job_id and ctype.startswith("text/plain"), "submit as NNI does: 200 {jobId} (%s)" % out)
    j = srv.job(job_id)
    check(j.get("jobStatus") in ("unapproved", "queued"), "at first unapproved or queued (%s)" % j.get("jobStatus"))
    run = srv.wait(job_id, ("running", "finished", "failed"))
    check(run.get("jobStatus") == "running" and run["jobStatusDetail"][0].get("startedAt", "").endswith("Z"),
          "then running with jobStatusDetail[0].startedAt (%s)" % run.get("jobStatusDetail"))
    j = srv.wait(job_id, ("finished", "failed"))
    hist = srv.history(job_id)
    check(j.get("jobStatus") == "finished" and hist["history"] == [
        "unapproved", "queued", "scheduling", "running", "finished"],
        "it walks unapproved, queued, scheduling, running, finished (%s)" % hist.get("history"))
    out_file = os.path.join(srv.share, "e1", "t1", "out")
    got = open(out_file).read() if os.path.exists(out_file) else ""
    check(got == "hello %s 0 $HOME/tmp\n" % job_id,
          "the command wrote into the shared filesystem, with DLWS_JOB_ID, its GPU and the env list (%r)" % got)
    check(j["jobName"] == "nni_exp_e1_trial_t1" and j["userName"] == EMAIL and j["vcName"] == TEAM
          and j["jobParams"]["preemptionAllowed"] is False and j["jobTime"].endswith("GMT"),
          "the job as DLTS shows it: jobName, userName, vcName, jobParams, jobTime")
    code, out, _ = srv.request("GET", "/api/v2/clusters/%s/jobs/%s" % (CLUSTER, job_id), email="bob@example.com")
    check(code == 200 and out == {}, "another user's job: 200 {}, as DLTS answers")
    code, out, _ = srv.request("GET", "/api/v2/clusters/%s/jobs/no-such-job" % CLUSTER)
    check(code == 200 and out == {}, "an unknown job: 200 {}")
    return job_id


def test_refusals(srv):
    before = srv.request("GET", "/_test/stats", auth=False)[1]["created"]
    for field, value, what in (("jobName", "", "Job name cannot be empty"), ("image", "", "image cannot be empty"),
                               ("cmd", None, "cmd cannot be empty"), ("gpuType", "V100", "gpuType"),
                               ("resourcegpu", "1", "resourcegpu"), ("userName", "bob@example.com", "userName"),
                               ("jobtrainingtype", "PSDistJob", "RegularJob"), ("workPath", "../x", "'..'"),
                               ("interactivePorts", [8080], "40000-49999"), ("env", [{"name": "A"}], "env")):
        b = nni_job("true", "bad")
        if value is None:
            del b[field]
        else:
            b[field] = value
        code, out, _ = srv.request("POST", "/api/clusters/%s/jobs" % CLUSTER, b)
        check(code == 200 and isinstance(out, dict) and "jobId" not in out
              and out.get("error", "").startswith("Cannot create job!") and what in out["error"],
              "%s=%r: 200 {error: Cannot create job!...} naming it (%s)" % (field, value, out))
    b = nni_job("true", "bad")
    b["vcName"] = b["team"] = "other2"
    code, out, _ = srv.request("POST", "/api/clusters/%s/jobs" % CLUSTER, b)
    check(code == 200 and out.get("error") == "Cannot create job!Access Denied!",
          "a team not the user's: Access Denied!")
    b = nni_job("true", "bad")
    del b["team"], b["vcName"]
    code, out, _ = srv.request("POST", "/api/clusters/%s/jobs" % CLUSTER, b)
    check(code == 400 and "required property 'team'" in out, "no team nor vcName: 400 from the dashboard (%r)" % out)
    code, out, _ = srv.request("POST", "/api/clusters/%s/jobs" % CLUSTER, b"{not json")
    check(code == 400, "a body that is not JSON: 400")
    code, out, _ = srv.request("POST", "/api/clusters/nope/jobs", nni_job("true", "bad"))
    check(code == 404 and out == "Cluster is not found", "submit to an unknown cluster: 404")
    code, out, _ = srv.request("POST", "/api/clusters/%s/jobs" % CLUSTER, nni_job("true", "bad"), pw="0" * 32)
    check(code == 403, "submit with a wrong password: 403")
    after = srv.request("GET", "/_test/stats", auth=False)[1]["created"]
    check(after == before, "no refused submission created a job (%d, %d)" % (before, after))


def test_failed(srv):
    code, out, _ = srv.submit("echo failing; exit 3", name="nni_exp_e1_trial_t2")
    j = srv.wait(out["jobId"], ("finished", "failed"))
    check(j.get("jobStatus") == "failed" and j["jobStatusDetail"][0].get("exitCode") == 3,
          "a command exiting 3: failed (%s)" % j.get("jobStatusDetail"))
    check("failing" in srv.history(out["jobId"]).get("output", ""), "its output is kept")


def test_gpus_and_kill(srv):
    pidfile = os.path.join(srv.share, "pid")
    cmd = "echo $$ > %s/pid; trap 'sleep 0.3; exit 1' TERM; while true; do sleep 0.1; done" % SHARED
    code, a, _ = srv.submit(cmd, name="nni_exp_e1_trial_t3", resourcegpu=2)
    a = a["jobId"]
    srv.wait(a, ("running",))
    pid = wait_pid(pidfile)
    code, b, _ = srv.submit("echo b", name="nni_exp_e1_trial_t4", resourcegpu=1)
    b = b["jobId"]
    time.sleep(0.8)
    jb = srv.job(b)
    check(jb.get("jobStatus") == "queued" and "waiting" in jb["jobStatusDetail"][0].get("message", ""),
          "a job that needs a GPU while another holds both: queued (%s)" % jb.get("jobStatus"))
    code, out, ctype = srv.request("PUT", "/api/clusters/%s/jobs/%s/status" % (CLUSTER, a), {"status": "killing"})
    check(code == 200 and out == {"result": "Success, the job is scheduled to be terminated."},
          "PUT status killing: 200 Success (%s)" % out)
    check(srv.job(a).get("jobStatus") == "killing", "the job is killing at once")
    ja = srv.wait(a, ("killed",))
    check(ja.get("jobStatus") == "killed" and pid > 0 and not os.path.exists("/proc/%d" % pid),
          "then killed, its process gone (pid %d)" % pid)
    jb = srv.wait(b, ("finished", "failed"))
    check(jb.get("jobStatus") == "finished", "the queued job ran once the GPUs were free (%s)" % jb.get("jobStatus"))
    code, out, _ = srv.request("PUT", "/api/clusters/%s/jobs/%s/status" % (CLUSTER, a), {"status": "killing"})
    check(code == 200 and out == {"result": "Cannot Kill the job. Job ID:%s" % a}, "killing a killed job: Cannot Kill")
    code, out, _ = srv.request("PUT", "/api/clusters/%s/jobs/%s/status" % (CLUSTER, a), {"status": "stop"})
    check(code == 400 and "allowed values" in out, "a status not in the list: 400")
    code, c, _ = srv.submit("sleep 30", name="nni_exp_e1_trial_t5", resourcegpu=3)
    time.sleep(0.5)
    check(srv.job(c["jobId"]).get("jobStatus") == "queued", "more GPUs than the cluster has: stays queued")
    srv.request("PUT", "/api/clusters/%s/jobs/%s/status" % (CLUSTER, c["jobId"]), {"status": "killing"})
    check(srv.wait(c["jobId"], ("killed",)).get("jobStatus") == "killed", "a queued job killed: killed")
    stats = srv.request("GET", "/_test/stats", auth=False)[1]
    check(stats["gpus_used"][CLUSTER] == [], "every GPU free again (%s)" % stats["gpus_used"])


def starts(srv, n, timeout=10):
    """the lines of share/starts once it has n (or after timeout)"""
    path = os.path.join(srv.share, "starts")
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = open(path).read().count("x") if os.path.exists(path) else 0
        if got >= n:
            return got
        time.sleep(0.05)
    return got


def test_pause(srv):
    counter = os.path.join(SHARED, "starts")
    code, out, _ = srv.submit("echo x >> %s; sleep 30" % counter, name="nni_exp_e1_trial_t6")
    j = out["jobId"]
    srv.wait(j, ("running",))
    starts(srv, 1)
    path = "/api/clusters/%s/jobs/%s/status" % (CLUSTER, j)
    code, out, _ = srv.request("PUT", path, {"status": "pausing"})
    check(out == {"result": "Success, the job is scheduled to be paused."} and
          srv.wait(j, ("paused",)).get("jobStatus") == "paused", "pausing: paused")
    code, out, _ = srv.request("PUT", path, {"status": "queued"})
    check(out == {"result": "Success, the job is scheduled to be resumed."} and
          srv.wait(j, ("running",)).get("jobStatus") == "running", "resumed (queued): running again")
    n = starts(srv, 2)
    check(n == 2, "the command ran from the start again (%d starts)" % n)
    srv.request("PUT", path, {"status": "killing"})
    check(srv.wait(j, ("killed",)).get("jobStatus") == "killed", "and killed")


def test_endpoints(srv, job_id):
    code, out, _ = srv.submit("sleep 30", name="nni_exp_e1_trial_t7")
    j = out["jobId"]
    path = "/api/clusters/%s/jobs/%s/endpoints" % (CLUSTER, j)
    for port in (39999, 50000, 8081):
        code, out, ctype = srv.request("POST", path, {"endpoints": [{"name": "nni-rest-server", "podPort": port}]})
        check(code == 400 and "40000-49999" in out and ctype == "application/json",
              "podPort %d: 400, DLTS's message (%r)" % (port, out))
    code, out, _ = srv.request("POST", path, {"endpoints": [{"name": "x" * 17, "podPort": 40001}]})
    check(code == 400 and "less than 16" in out, "a name of 17: 400")
    code, out, _ = srv.request("POST", path, {"endpoints": [{"name": "p"}]})
    check(code == 400 and "oneOf" in out, "no podPort: 400 from the dashboard's schema")
    code, out, _ = srv.request("POST", path, {"endpoints": [{"name": "nni-rest-server", "podPort": 40001}]})
    check(code == 200 and isinstance(out, dict) and ("e-%s-port-40001" % j) in out, "podPort 40001: 200 (%s)" % out)
    srv.wait(j, ("running",))
    code, out, _ = srv.request("GET", path)
    ep = out[0] if isinstance(out, list) and out else {}
    check(code == 200 and ep.get("podPort") == 40001 and ep.get("status") == "running" and ep.get("port") == 40001
          and ep.get("nodeName"), "GET endpoints: running, its port and nodeName (%s)" % out)
    code, out, _ = srv.request("POST", "/api/clusters/%s/jobs/nope/endpoints" % CLUSTER,
                               {"endpoints": [{"name": "a", "podPort": 40002}]})
    check(code == 404 and "cannot be found" in out, "endpoints of an unknown job: 404")
    code, out, _ = srv.request("GET", "/api/clusters/%s/jobs/%s/endpoints" % (CLUSTER, job_id), email="bob@example.com")
    check(code == 200 and out == [], "another user's endpoints: []")
    srv.request("PUT", "/api/clusters/%s/jobs/%s/status" % (CLUSTER, j), {"status": "killing"})
    srv.wait(j, ("killed",))


def test_list(srv, job_id):
    code, out, _ = srv.request("GET", "/api/v2/clusters/%s/teams/%s/jobs?user=me&limit=100" % (CLUSTER, TEAM))
    names = [x["jobName"] for x in out] if code == 200 else []
    check(code == 200 and names[-1] == "nni_exp_e1_trial_t1" and len(names) == 7 and any(
        x["jobId"] == job_id and x["jobName"] == "nni_exp_e1_trial_t1" for x in out),
        "the team's list, newest first: the job found by its jobName (%s)" % names)
    code, out, _ = srv.request("GET", "/api/v2/clusters/%s/teams/%s/jobs?user=me&limit=2" % (CLUSTER, TEAM))
    check(code == 200 and len(out) == 2, "limit=2: the 2 newest ended jobs (%d)" % len(out))
    code, out, _ = srv.request("GET", "/api/v2/clusters/%s/teams/%s/jobs?user=me" % (CLUSTER, TEAM),
                               email="bob@example.com")
    check(code == 200 and out == [], "bob's own list is empty")
    code, out, _ = srv.request("GET", "/api/v2/clusters/%s/teams/%s/jobs?user=all&limit=100" % (CLUSTER, TEAM),
                               email="bob@example.com")
    check(code == 200 and len(out) == 7, "user=all: the team's jobs of every user")


def fault_served(srv):
    return srv.request("GET", "/_test/stats", auth=False)[1]["fault_served"]


def test_faults(srv):
    srv.request("POST", "/_test/fail", {"mode": "status", "status": 429, "count": 2, "action": "submit"}, auth=False)
    check(fault_served(srv) == 0, "a fault just set was served to no request")
    srv.request("GET", "/api/teams/%s/clusters/%s" % (TEAM, CLUSTER))
    check(fault_served(srv) == 0, "a request of another action does not count for the fault")
    codes = [srv.submit("true", name="nni_exp_e1_trial_429")[0] for i in range(3)]
    check(codes[:2] == [429, 429] and codes[2] != 429 and fault_served(srv) == 2,
          "a fault of count 2 is served twice, then no more: fault_served %d (%s)" % (fault_served(srv), codes))
    srv.request("POST", "/_test/fail", {"mode": "status", "status": 503, "count": 1}, auth=False)
    check(fault_served(srv) == 0, "a new fault starts fault_served again at 0")
    code, out, _ = srv.request("GET", "/api/teams/%s/clusters/%s" % (TEAM, CLUSTER))
    check(code == 503 and fault_served(srv) == 1, "an injected 503, counted")
    srv.request("POST", "/_test/fail", {"mode": "drop", "count": 1}, auth=False)
    try:
        srv.request("GET", "/api/teams/%s/clusters/%s" % (TEAM, CLUSTER))
        dropped = False
    except (http.client.HTTPException, ConnectionError):
        dropped = True
    check(dropped, "a dropped connection")
    srv.request("POST", "/_test/fail", {"mode": "drop_after", "count": 1, "action": "submit"}, auth=False)
    try:
        srv.submit("true", name="nni_exp_e1_trial_lost")
        dropped = False
    except (http.client.HTTPException, ConnectionError):
        dropped = True
    code, out, _ = srv.request("GET", "/api/v2/clusters/%s/teams/%s/jobs?limit=100" % (CLUSTER, TEAM))
    check(dropped and [x["jobName"] for x in out].count("nni_exp_e1_trial_lost") == 1,
          "a submission answered by a dropped connection: the job exists, found by name in the list")
    srv.request("POST", "/_test/fail", {"delay": 1.0, "count": 1, "action": "get"}, auth=False)
    t = time.time()
    srv.job("no-such-job")
    check(time.time() - t >= 1.0, "a slow answer (%.2f s)" % (time.time() - t))


def test_bad_input(srv):
    """odd bodies and paths: each answered, none kills a handler"""
    statuses = set()
    for path in ("/api/clusters/%s/jobs" % CLUSTER, "/api/clusters/%s/jobs/x/status" % CLUSTER,
                 "/api/clusters/%s/jobs/x/endpoints" % CLUSTER, "/api/clusters/%ff/jobs",
                 "/api/v2/clusters/%s/teams/%s/jobs?limit=-1&user=all" % (CLUSTER, TEAM)):
        for method in ("GET", "POST", "PUT"):
            for body in (b"[]", b"null", b'"x"', b'{"team": 5}', b'{"status": ["x"]}', b'{"endpoints": [{}]}',
                         b'{"endpoints": [{"name": "a", "podPort": NaN}]}', b"\xff\xfe", b'{"team": "nni", "env": 5}'):
                statuses.add(srv.request(method, path, body)[0])
    check(statuses <= {200, 400, 404} and "Traceback" not in server_log(os.path.dirname(srv.share)),
          "odd bodies and paths: 200, 400 or 404 each, no handler failed (%s)" % sorted(statuses))


def test_random_faults(tmp):
    with Server(tmp, "--fail-rate", "0.3", "--drop-rate", "0.1", "--drop-after-rate", "0.1", "--slow-rate", "0.2",
                "--slow-seconds", "0.2", "--seed", "5") as srv:
        outcomes = []
        for _ in range(40):
            t = time.time()
            try:
                code = srv.request("GET", "/api/teams/%s/clusters/%s" % (TEAM, CLUSTER))[0]
                outcomes.append("slow" if code == 200 and time.time() - t >= 0.2 else code)
            except (http.client.HTTPException, ConnectionError):
                outcomes.append("dropped")
        kinds = set(outcomes)
        injected = srv.request("GET", "/_test/stats", auth=False)[1]["injected"]
        check({200, "dropped", "slow"} <= kinds and kinds & {500, 502, 503}
              and injected == 40 - outcomes.count(200),
              "--fail-rate, --drop-rate, --drop-after-rate, --slow-rate: %s" % sorted((str(k), outcomes.count(k)) for k in kinds))


def checks(tmp):
    with Server(tmp) as srv:
        test_auth(srv)
        test_cluster(srv)
        job_id = test_walk(srv)
        test_refusals(srv)
        test_failed(srv)
        test_gpus_and_kill(srv)
        test_pause(srv)
        test_endpoints(srv, job_id)
        test_list(srv, job_id)
        test_faults(srv)
        test_bad_input(srv)
    check(password() not in server_log(tmp), "the password is not in the server's log")
    tmp2 = os.path.join(tmp, "nobind")
    os.makedirs(tmp2)
    with Server(tmp2, "--no-bind", "--dashboard-relay") as srv:
        code, out, _ = srv.submit("echo rewritten > %s/f" % SHARED)
        j = srv.wait(out["jobId"], ("finished", "failed"))
        f = os.path.join(srv.share, "f")
        check(j.get("jobStatus") == "finished" and os.path.exists(f) and open(f).read() == "rewritten\n",
              "--no-bind: the container path rewritten to the local directory")
        code, out, _ = srv.request("POST", "/api/clusters/%s/jobs/%s/endpoints" % (CLUSTER, out["jobId"]),
                                   {"endpoints": [{"name": "nni", "podPort": 8081}]})
        check(code == 502 and out == "Bad Gateway", "--dashboard-relay: a refused port is 502 Bad Gateway")
    tmp3 = os.path.join(tmp, "random")
    os.makedirs(tmp3)
    test_random_faults(tmp3)


def main():
    run_checks("dlts-server-test-", checks)

if __name__ == "__main__":
    main()

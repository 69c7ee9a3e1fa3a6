#!/usr/bin/python3
"""The PAI-DLC test server (dlc_server.py) against trialq's C signer (acs_sign_cli).

Every request is signed by the C signer (common/acs_sign.c through acs_sign_cli) and sent
as it prints it; the server checks the signature from the documented rules on its own
(Python), so this is also a cross-check of the two. The server must accept a good
signature, refuse a wrong secret, an unknown key, a stale x-acs-date, a replayed nonce, a
body changed after signing, an unsigned request and a wrong action; walk a job through
Creating, Queuing, Running to Succeeded running a real command that writes to the NAS
mount (seen in the local directory) and logs; fail a job whose command fails; stop a
running job (its process ends); accept a second job of the same name; list and page; and
answer the injected faults.

usage: test_dlc_server.py ACS_SIGN_CLI
"""
import datetime
import http.client
import json
import os
import subprocess
import sys
import time

from servertest import ServerProcess, check, run_checks, server_log, wait_pid

SIGNER = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else sys.exit(__doc__)
KEY_ID, SECRET = "LTAItestkey", "test-secret-never-logged"


class Server(ServerProcess):
    def __init__(self, tmp, *extra):
        self.tmp = tmp
        self.nas = os.path.join(tmp, "nas")
        os.makedirs(self.nas, exist_ok=True)
        super().__init__("dlc_server.py", tmp, [
            "--access-key", KEY_ID + ":" + SECRET, "--data-source", "d-nas1:/mnt/nas:" + self.nas,
            "--workspace", "ws-1", "--creating-seconds", "0.3", "--queuing-seconds", "0.3", "--stop-grace", "1",
            *extra])
        self.host = "127.0.0.1:%d" % self.port

    def sign(self, method, path, action, query=(), body=None, key_id=KEY_ID, secret=SECRET, date=None, nonce=None):
        argv = [SIGNER, method, self.host, path, action, "2020-12-03"]
        for k, v in query:
            argv += ["--query", "%s=%s" % (k, v)]
        if body is not None:
            bf = os.path.join(self.tmp, "body.json")
            with open(bf, "wb") as f:
                f.write(body)
            argv += ["--body-file", bf, "--content-type", "application/json"]
        if date:
            argv += ["--date", date]
        if nonce:
            argv += ["--nonce", nonce]
        env = dict(os.environ, ALIBABA_CLOUD_ACCESS_KEY_ID=key_id, ALIBABA_CLOUD_ACCESS_KEY_SECRET=secret)
        out = subprocess.run(argv, env=env, capture_output=True, check=True)
        return json.loads(out.stdout)

    def send(self, method, signed, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            c.putrequest(method, signed["target"], skip_host=True, skip_accept_encoding=True)
            for k, v in signed["headers"].items():
                c.putheader(k, v)
            if body is not None:
                c.putheader("Content-Length", str(len(body)))
            c.endheaders(body)
            r = c.getresponse()
            return r.status, json.loads(r.read() or b"{}")
        finally:
            c.close()

    def call(self, method, path, action, query=(), body=None, **kw):
        raw = None if body is None else json.dumps(body).encode()
        return self.send(method, self.sign(method, path, action, query, raw, **kw), raw)

    def control(self, method, path, obj=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        data = None if obj is None else json.dumps(obj).encode()
        c.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        r = c.getresponse()
        out = json.loads(r.read() or b"{}")
        c.close()
        return out


def job_body(name, command, pods=1, **more):
    b = {"DisplayName": name, "JobType": "PyTorchJob", "WorkspaceId": "ws-1",
         "JobSpecs": [{"Type": "Worker", "Image": "registry.example.com/nni:latest", "PodCount": pods,
                       "EcsSpec": "ecs.c6.large"}],
         "UserCommand": command, "DataSources": [{"DataSourceId": "d-nas1"}]}
    b.update(more)
    return b


def wait_status(srv, job_id, final, timeout=20):
    seen = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        code, j = srv.call("GET", "/api/v1/jobs/" + job_id, "GetJob")
        if code == 200 and (not seen or seen[-1] != j["Status"]):
            seen.append(j["Status"])
        if code == 200 and j["Status"] in final:
            return seen, j
        time.sleep(0.05)
    return seen, None


def history(job):
    return [h["Status"] for h in (job or {}).get("StatusHistory", [])]


def subsequence(part, whole):
    it = iter(whole)
    return all(x in it for x in part)


def test_signature(srv):
    code, out = srv.call("GET", "/api/v1/jobs", "ListJobs")
    check(code == 200 and out.get("TotalCount") == 0 and out.get("Jobs") == [], "a good signature is accepted (ListJobs)")
    code, out = srv.call("GET", "/api/v1/jobs", "ListJobs", secret="wrong-secret")
    check(code == 400 and out.get("Code") == "SignatureDoesNotMatch", "a wrong secret: 400 SignatureDoesNotMatch")
    check(SECRET not in json.dumps(out), "the refusal does not show the secret")
    code, out = srv.call("GET", "/api/v1/jobs", "ListJobs", key_id="LTAIunknown")
    check(code == 404 and out.get("Code") == "InvalidAccessKeyId.NotFound", "an unknown key: 404 InvalidAccessKeyId.NotFound")
    stale = datetime.datetime.fromtimestamp(time.time() - 20 * 60, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    code, out = srv.call("GET", "/api/v1/jobs", "ListJobs", date=stale)
    check(code == 400 and out.get("Code") == "InvalidTimeStamp.Expired", "x-acs-date 20 minutes old: 400 InvalidTimeStamp.Expired")
    future = datetime.datetime.fromtimestamp(time.time() + 20 * 60, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    code, out = srv.call("GET", "/api/v1/jobs", "ListJobs", date=future)
    check(code == 400 and out.get("Code") == "InvalidTimeStamp.Expired", "x-acs-date 20 minutes ahead: refused")
    signed = srv.sign("GET", "/api/v1/jobs", "ListJobs", query=[("PageSize", "5")])
    first, second = srv.send("GET", signed), srv.send("GET", signed)
    check(first[0] == 200, "a request with a fresh nonce is accepted")
    check(second[0] == 400 and second[1].get("Code") == "SignatureNonceUsed", "the same request again: 400 SignatureNonceUsed")
    body = json.dumps(job_body("tampered", "true")).encode()
    signed = srv.sign("POST", "/api/v1/jobs", "CreateJob", body=body)
    code, out = srv.send("POST", signed, body.replace(b"true", b"evil"))
    check(code == 400 and out.get("Code") == "SignatureDoesNotMatch", "a body changed after signing: SignatureDoesNotMatch")
    signed = srv.sign("GET", "/api/v1/jobs", "ListJobs", query=[("PageSize", "5")])
    signed["target"] = signed["target"].replace("PageSize=5", "PageSize=6")
    code, out = srv.send("GET", signed)
    check(code == 400 and out.get("Code") == "SignatureDoesNotMatch", "a query changed after signing: SignatureDoesNotMatch")
    signed = srv.sign("GET", "/api/v1/jobs", "ListJobs")
    del signed["headers"]["authorization"]
    code, out = srv.send("GET", signed)
    check(code == 400 and out.get("Code") == "IncompleteSignature", "no Authorization: 400 IncompleteSignature")
    signed = srv.sign("GET", "/api/v1/jobs", "ListJobs")
    signed["headers"]["x-acs-security-token"] = "unsigned"
    code, out = srv.send("GET", signed)
    check(code == 400 and out.get("Code") == "IncompleteSignature", "an x-acs- header left unsigned: IncompleteSignature")
    code, out = srv.call("GET", "/api/v1/jobs", "GetJob")
    check(code == 404 and out.get("Code") == "InvalidApi.NotFound", "x-acs-action not the route's: 404 InvalidApi.NotFound")
    stats = srv.control("GET", "/_test/stats")
    check(stats["created"] == 0, "nothing was created by the refused requests")


def test_jobs(srv):
    code, out = srv.call("POST", "/api/v1/jobs", "CreateJob",
                         body=job_body("nni_exp_t1_trial_a", "mkdir -p /mnt/nas/t1 && echo '{\"default\": 0.5}' > "
                                       "/mnt/nas/t1/metrics && echo hello from the pod && echo $MY_ENV && sleep 0.5",
                                       Envs={"MY_ENV": "env-value"}))
    check(code == 200 and out.get("JobId", "").startswith("dlc"), "CreateJob answers a JobId")
    job_id = out.get("JobId", "")
    seen, j = wait_status(srv, job_id, ("Succeeded", "Failed", "Stopped"))
    hist = history(j)
    check(hist == ["Creating", "Queuing", "Running", "Succeeded"] and subsequence(seen, hist),
          "the job walks Creating, Queuing, Running, Succeeded (StatusHistory %s, polls saw %s)" % (hist, seen))
    check(j is not None and j.get("DisplayName") == "nni_exp_t1_trial_a" and j.get("GmtCreateTime", "").endswith("Z")
          and j.get("GmtFinishTime") and len(j.get("Pods", [])) == 1, "GetJob: name, times, one pod")
    metrics = os.path.join(srv.nas, "t1", "metrics")
    check(os.path.exists(metrics) and json.load(open(metrics)) == {"default": 0.5},
          "the pod wrote through the NAS mount into the local directory")
    pod = j["Pods"][0]["PodId"] if j and j.get("Pods") else "none"
    code, out = srv.call("GET", "/api/v1/jobs/%s/pods/%s/logs" % (job_id, pod), "GetPodLogs", query=[("MaxLines", "100")])
    check(code == 200 and "hello from the pod" in out.get("Logs", []) and "env-value" in out.get("Logs", []),
          "GetPodLogs: the pod's output, with the job's Envs")

    code, out = srv.call("POST", "/api/v1/jobs", "CreateJob", body=job_body("nni_exp_t1_trial_a", "exit 3"))
    check(code == 200 and out.get("JobId") != job_id, "a second job with the same DisplayName is accepted, its own JobId")
    seen, j = wait_status(srv, out.get("JobId", ""), ("Succeeded", "Failed", "Stopped"))
    check(j is not None and j["Status"] == "Failed" and "3" in j.get("ReasonMessage", ""), "a command exiting 3: Failed")

    code, out = srv.call("POST", "/api/v1/jobs", "CreateJob",
                         body=job_body("nni_exp_t1_trial_b", "echo $$ > /mnt/nas/pid; trap 'sleep 0.5; exit 1' TERM; "
                                       "while true; do sleep 0.1; done"))
    long_id = out.get("JobId", "")
    seen, j = wait_status(srv, long_id, ("Running",))
    pid = wait_pid(os.path.join(srv.nas, "pid"))
    code, out = srv.call("POST", "/api/v1/jobs/%s/stop" % long_id, "StopJob")
    check(code == 200 and out.get("JobId") == long_id, "StopJob answers")
    seen, j = wait_status(srv, long_id, ("Stopped", "Succeeded", "Failed"))
    hist = history(j)
    check(hist[-3:] == ["Running", "Stopping", "Stopped"] and subsequence(seen, hist),
          "a stopped job: Stopping, then Stopped (StatusHistory %s, polls saw %s)" % (hist, seen))
    check(not os.path.exists("/proc/%d" % pid), "the stopped job's process is gone")

    code, out = srv.call("GET", "/api/v1/jobs", "ListJobs", query=[("DisplayName", "nni_exp_t1_trial_a")])
    check(code == 200 and out.get("TotalCount") == 2 and all(x["DisplayName"] == "nni_exp_t1_trial_a" for x in out["Jobs"]),
          "ListJobs by DisplayName finds both jobs of that name")
    code, out = srv.call("GET", "/api/v1/jobs", "ListJobs", query=[("DisplayName", "nni_exp_t1"), ("PageSize", "2"),
                                                                     ("PageNumber", "2")])
    check(code == 200 and out.get("TotalCount") == 3 and len(out.get("Jobs", [])) == 1,
          "ListJobs pages: 3 in all, the second page of 2 holds one")
    code, out = srv.call("GET", "/api/v1/jobs/dlcnosuchjob", "GetJob")
    check(code == 404 and out.get("Code") == "JobNotFound", "an unknown JobId: 404 JobNotFound")
    code, out = srv.call("POST", "/api/v1/jobs", "CreateJob", body={"DisplayName": "x", "JobType": "PyTorchJob",
                                                                   "JobSpecs": [{"Type": "Worker", "Image": "i",
                                                                                 "EcsSpec": "ecs.c6.large"}]})
    check(code == 400 and out.get("Code") == "MissingUserCommand", "CreateJob without UserCommand: MissingUserCommand")
    code, out = srv.call("POST", "/api/v1/jobs", "CreateJob", body=job_body("x", "true", JobType="pytorchjob"))
    check(code == 400 and out.get("Code") == "InvalidParameter", "JobType is case-sensitive")
    code, out = srv.call("POST", "/api/v1/jobs", "CreateJob", body=job_body("x", "true", DataSources=[{"DataSourceId": "d-x"}]))
    check(code == 400 and "d-x" in out.get("Message", ""), "an unknown data source is refused")
    code, out = srv.call("POST", "/api/v1/jobs", "CreateJob", body=job_body("x", "true", WorkspaceId="ws-9"))
    check(code == 400 and "ws-9" in out.get("Message", ""), "an unknown workspace is refused")


def test_faults(srv):
    srv.control("POST", "/_test/fail", {"mode": "status", "status": 503, "count": 1})
    code, out = srv.call("GET", "/api/v1/jobs", "ListJobs")
    check(code == 503 and out.get("Code") == "ServiceUnavailable", "an injected 503 ServiceUnavailable")
    code, out = srv.call("GET", "/api/v1/jobs", "ListJobs")
    check(code == 200, "the next request is answered")
    srv.control("POST", "/_test/fail", {"mode": "throttle", "count": 1})
    code, out = srv.call("GET", "/api/v1/jobs", "ListJobs")
    check(code == 400 and out.get("Code") == "Throttling.User", "an injected Throttling.User")
    srv.control("POST", "/_test/fail", {"mode": "throttle", "status": 429, "count": 1})
    code, out = srv.call("GET", "/api/v1/jobs", "ListJobs")
    check(code == 429 and out.get("Code") == "Throttling.User", "an injected Throttling.User as HTTP 429")
    srv.control("POST", "/_test/fail", {"mode": "status", "status": 500, "seconds": 30, "action": "StopJob"})
    code, out = srv.call("GET", "/api/v1/jobs", "ListJobs")
    check(code == 200, "a fault of another action does not touch ListJobs")
    code, out = srv.call("POST", "/api/v1/jobs/dlcnosuchjob/stop", "StopJob")
    check(code == 500 and out.get("Code") == "InternalError", "an injected 500 InternalError for StopJob")
    srv.control("POST", "/_test/fail", {})
    srv.control("POST", "/_test/fail", {"mode": "drop", "count": 1})
    try:
        srv.call("GET", "/api/v1/jobs", "ListJobs")
        dropped = False
    except (http.client.HTTPException, ConnectionError):
        dropped = True
    check(dropped, "an injected dropped connection: no answer")
    before = srv.control("GET", "/_test/stats")["created"]
    srv.control("POST", "/_test/fail", {"mode": "drop_after", "count": 1, "action": "CreateJob"})
    try:
        srv.call("POST", "/api/v1/jobs", "CreateJob", body=job_body("nni_exp_lost", "true"))
        dropped = False
    except (http.client.HTTPException, ConnectionError):
        dropped = True
    code, out = srv.call("GET", "/api/v1/jobs", "ListJobs", query=[("DisplayName", "nni_exp_lost")])
    check(dropped and srv.control("GET", "/_test/stats")["created"] == before + 1 and out.get("TotalCount") == 1,
          "a CreateJob handled and then dropped: the job exists, ListJobs finds it")


def checks(tmp):
    with Server(tmp) as srv:
        test_signature(srv)
        test_jobs(srv)
        test_faults(srv)
    check(SECRET not in server_log(tmp), "the secret is not in the server's log")
    # the same run of a command where the mounts are rewritten instead of bind-mounted
    tmp2 = os.path.join(tmp, "nobind")
    os.makedirs(tmp2)
    srv = Server(tmp2, "--no-bind")
    try:
        code, out = srv.call("POST", "/api/v1/jobs", "CreateJob",
                             body=job_body("nni_exp_nobind", "echo ok > /mnt/nas/done"))
        seen, j = wait_status(srv, out.get("JobId", ""), ("Succeeded", "Failed", "Stopped"))
        check(j is not None and j["Status"] == "Succeeded" and open(os.path.join(srv.nas, "done")).read() == "ok\n",
              "--no-bind: the mount path rewritten to the local directory")
    finally:
        srv.stop()
    # --max-running 1: a second job waits in Queuing while the first runs
    tmp4 = os.path.join(tmp, "quota")
    os.makedirs(tmp4)
    srv = Server(tmp4, "--max-running", "1")
    try:
        first = srv.call("POST", "/api/v1/jobs", "CreateJob", body=job_body("nni_q1", "sleep 1.5"))[1]["JobId"]
        second = srv.call("POST", "/api/v1/jobs", "CreateJob", body=job_body("nni_q2", "true"))[1]["JobId"]
        wait_status(srv, first, ("Running",))
        time.sleep(0.8)
        code, j = srv.call("GET", "/api/v1/jobs/" + second, "GetJob")
        queued = j.get("Status")
        seen, j = wait_status(srv, second, ("Succeeded", "Failed", "Stopped"))
        code, j1 = srv.call("GET", "/api/v1/jobs/" + first, "GetJob")
        check(queued == "Queuing" and j is not None and j["Status"] == "Succeeded"
              and j["GmtRunningTime"] >= j1["GmtFinishTime"],
              "--max-running 1: the second job stays Queuing until the first ended")
    finally:
        srv.stop()
    # random faults: some answers fail, some connections drop, the rest are answered
    tmp3 = os.path.join(tmp, "random")
    os.makedirs(tmp3)
    srv = Server(tmp3, "--fail-rate", "0.3", "--drop-rate", "0.2", "--throttle-rate", "0.1", "--seed", "7")
    try:
        outcomes = []
        for _ in range(40):
            try:
                outcomes.append(srv.call("GET", "/api/v1/jobs", "ListJobs")[1].get("Code", "ok"))
            except (http.client.HTTPException, ConnectionError):
                outcomes.append("dropped")
        kinds = set(outcomes)
        check({"ok", "dropped", "Throttling.User"} <= kinds and kinds & {"ServiceUnavailable", "InternalError"}
              and srv.control("GET", "/_test/stats")["injected"] == 40 - outcomes.count("ok"),
              "--fail-rate, --drop-rate, --throttle-rate: %s" % sorted((k, outcomes.count(k)) for k in kinds))
    finally:
        srv.stop()


def main():
    run_checks("dlc-server-test-", checks)


if __name__ == "__main__":
    main()

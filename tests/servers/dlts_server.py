#!/usr/bin/python3
"""A strict test double of DLTS (Microsoft's Deep Learning Training Service, the
DLWorkspace dashboard's REST API), for trialq's tests.

DLTS cannot run on the test machines, so this server speaks the part of the dashboard's
API (`{dashboard}api/...`, the paths below) that a trial platform needs, as the
dashboard (Koa) and the cluster's REST API behind it (Flask) answer, and runs each job's
`cmd` as a local process, with the shared filesystem mapped to a local directory:

  GET  /api/teams/{team}/clusters/{cluster}          the team's view of a cluster (a DLTS
       "VC"): {"vcName", "quota", "metadata", "gpu_capacity", ...}; quota and metadata
       are JSON *strings*, metadata's first key is the cluster's GPU type
       ({"P100": {"num_gpu_per_node": 4}}); cluster ".default" is the first one
  POST /api/clusters/{cluster}/jobs                  submit -> {"jobId"} (text/plain, as
       the dashboard relays the REST API's text); refused submissions are 200 too, with
       {"error": "Cannot create job!<why>"} and no jobId, as DLTS answers them
  GET  /api/v2/clusters/{cluster}/jobs/{jobId}       {"jobId", "jobName", "userName",
       "vcName", "jobStatus", "jobStatusDetail": [{"podName", "startedAt", ...}],
       "jobType", "jobTime", "jobParams"}; an unknown job (or another user's) is 200 {}
  GET  /api/v2/clusters/{cluster}/teams/{team}/jobs?user=me|all&limit=N
       the jobs of the team on the cluster, newest first: every active one (unapproved,
       queued, scheduling, running, pausing, paused) and the N (default 10) newest
       others. DLTS has no lookup by name: a client finds its job by jobName in this list
  PUT  /api/clusters/{cluster}/jobs/{jobId}/status   {"status": "killing"|"pausing"|
       "queued"|"approved"} -> {"result": "Success, ..."} or {"result": "Cannot ..."}
  GET  /api/clusters/{cluster}/jobs/{jobId}/endpoints   [{"id", "name", "podPort",
       "status": "pending"|"running", "port", "nodeName", "domain", ...}]
  POST /api/clusters/{cluster}/jobs/{jobId}/endpoints   {"endpoints": ["ssh" |
       "ipython" | "tensorboard" | "theia" | {"name", "podPort"}]} -> the job's endpoints
       (text); a podPort outside 40000-49999 or a name longer than 16 is refused: 400
       with the message of DLTS's REST API (a JSON string), 404 for an unknown job, 403
       for another user's (--dashboard-relay: as DLTS's dashboard relays these, 502 "Bad
       Gateway", 403 kept)

Authentication, on every request: the query string `email=<e>&password=<p>` (`token=`
for the password: the old name), the password being md5("<email>:<master token>") in hex
as DLTS derives it. Refusals, as Koa writes them (text/plain): 403 "Forbidden" (no email
or no password), 403 "Invalid token" (a wrong password), 404 "Cluster is not found", 404
"Team is not found" (no such team, or the user is not in it), 400 with Ajv's messages (a
body the dashboard's schema refuses: no team/vcName, a status not in the list), 404 "Not
Found" (no such route).

Jobs walk unapproved -> queued -> scheduling -> running -> finished | failed (by the
exit code of cmd; --state-seconds in each state before running). A job waits in queued
while its cluster has fewer free GPUs than its resourcegpu (each --cluster has a number
of GPUs; DLTS's default policy: any waiting job that fits starts); the job gets
CUDA_VISIBLE_DEVICES of the GPUs it holds. Kill (PUT killing): the job is "killing" at
once, its process group gets SIGTERM, SIGKILL after --kill-grace seconds, then
"killed". Pause (pausing): its process is stopped the same way, "paused", its GPUs
freed; resume (queued): unapproved again, and cmd runs from the start. Killing a job
that has ended changes nothing ({"result": "Cannot Kill the job. Job ID:..."}).

cmd runs with bash, in --workdir, with the job's env list, DLTS's own variables
(DLWS_JOB_ID, DLTS_JOB_ID, DLWS_USER_EMAIL, DLWS_VC_NAME, DLWS_NUM_GPU_PER_WORKER) and
the shared filesystem where the job expects it (--mount CONTAINER_PATH:LOCAL_DIR):
bind-mounted in a private mount namespace when this server may (root), else the
container paths rewritten to the local directories in cmd.

Where DLTS is lenient the double is strict, and says so: a submission is refused (200
{"error": "Cannot create job!ERROR: ..."}) unless jobName, vcName (= team, when both are
given), userName (= the authenticated email; DLTS overwrites it), image and cmd are
non-empty strings, resourcegpu is an integer >= 0, gpuType is the cluster's GPU type,
jobtrainingtype is RegularJob, jobType (when given) is training, interactivePorts are
ports in 40000-49999, env is a list of {name, value} strings and mountpoints a list of
{name, enabled, containerPath, hostPath}.

Test controls (no authentication; only for the test that started the server):
  GET  /_test/stats               counters (fault_served: requests that met the
                                  fault /_test/fail set last), refusals by reason, the jobs' states
  GET  /_test/job/{jobId}         the submitted body as received, the states so far, output
  POST /_test/fail {"mode": "status"|"drop"|"drop_after"|"delay", "status": 503,
                    "count": N | "seconds": S, "delay": D,
                    "action": "cluster"|"submit"|"get"|"list"|"status"|"endpoints"}
                                  the next N requests (of that action) answered so, dropped
                                  before or after they are handled, or delayed D seconds
Faults at random: --fail-rate (500/502/503), --drop-rate, --drop-after-rate (handled,
then dropped: a job submitted whose jobId the client never hears), --slow-rate
(--slow-seconds late).
"""
import argparse
import hashlib
import hmac
import json
import os
import subprocess
import tempfile
import threading
import time
import urllib.parse
import uuid

from jobserver import (JsonHandler, ServerState, can_bind, common_args, kill_groups, mounted_argv, next_fault, serve,
                       set_fault)

ACTIVE = ("unapproved", "queued", "scheduling", "running", "pausing", "paused")
ENDPOINT_NAMES = ("ssh", "ipython", "tensorboard", "theia")
REASONS = {400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
           500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


class Refusal(Exception):
    """an answer other than the route's own: status and text/plain body, as Koa writes it
    (a message of the REST API behind the dashboard: a JSON string, as Flask writes it)"""

    def __init__(self, status, text=None, rest=False):
        super().__init__(text)
        self.status, self.text = status, text if text is not None else REASONS.get(status, "Error")
        self.ctype = "text/plain; charset=utf-8"
        if rest:
            self.text, self.ctype = json.dumps(self.text) + "\n", "application/json"


def http_date(t):
    """a time as Flask's jsonify writes a MySQL datetime: Fri, 27 Nov 2026 06:00:00 GMT"""
    return time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(t))


def k8s_time(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class Cluster:
    def __init__(self, spec):
        parts = spec.split(":")
        if len(parts) not in (3, 4) or not parts[0] or not parts[1] or not parts[2].isdigit():
            raise SystemExit("dlts_server: --cluster wants NAME:GPUTYPE:GPUS[:PER_NODE], not %r" % spec)
        self.name, self.gpu_type, self.gpus = parts[0], parts[1], int(parts[2])
        self.per_node = int(parts[3]) if len(parts) == 4 and parts[3].isdigit() else max(self.gpus, 1)
        self.used = set()  # GPU indices held by jobs

    def take(self, n):
        free = [i for i in range(self.gpus) if i not in self.used]
        if n > len(free):
            return None
        got = free[:n]
        self.used.update(got)
        return got


class Job:
    def __init__(self, job_id, body, raw, cluster, user):
        self.id, self.body, self.raw, self.cluster, self.user = job_id, body, raw, cluster, user
        self.name, self.team = body["jobName"], body["vcName"]
        self.gpu = body["resourcegpu"]
        self.status = "unapproved"
        self.history = ["unapproved"]
        self.created = time.time()
        self.started = self.finished = None
        self.proc = None
        self.code = None
        self.gpus = []
        self.output = None
        self.error = ""
        self.endpoints = {}

    def set(self, status):
        self.status = status
        self.history.append(status)

    def params(self):
        p = dict(self.body)
        p.update({"jobId": self.id, "familyToken": p.get("familyToken") or self.id, "isParent": 1,
                  "preemptionAllowed": to_bool(p.get("preemptionAllowed", False))})
        if not p.get("jobPath"):
            p["jobPath"] = "%s/jobs/%s/%s" % (self.user.split("@")[0], time.strftime("%y%m%d"), self.id)
        return p

    def detail(self):
        if self.status in ("unapproved", "queued"):
            return [{"message": "waiting for available resource. requested: %d %s GPU(s)"
                     % (self.gpu, self.cluster.gpu_type)}]
        d = {"podName": self.id}
        if self.started:
            d["startedAt"] = k8s_time(self.started)
        if self.finished:
            d["finishedAt"] = k8s_time(self.finished)
        if self.code is not None:
            d["exitCode"] = self.code
        if self.error:
            d["message"] = self.error
        return [d]

    def view(self):
        return {"jobId": self.id, "jobName": self.name, "userName": self.user, "vcName": self.team,
                "jobStatus": self.status, "jobStatusDetail": self.detail(), "jobType": "training",
                "jobTime": http_date(self.created), "jobParams": self.params()}


def to_bool(v):
    """DLTS's ToBool: True/False (any case), digits, ints, bools; else ValueError"""
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v != 0
    if isinstance(v, str):
        if v.isdigit():
            return int(v) != 0
        if v.upper() in ("TRUE", "FALSE"):
            return v.upper() == "TRUE"
    raise ValueError(v)


class State(ServerState):
    def __init__(self, args):
        super().__init__(args, {"calls": 0, "injected": 0, "fault_served": 0, "created": 0, "actions": {}, "refused": {}})
        self.master = args.master_token
        self.users = {}  # email -> set of teams
        for u in args.user:
            email, sep, teams = u.partition(":")
            if not sep or "@" not in email or not teams:
                raise SystemExit("dlts_server: --user wants EMAIL:TEAM[,TEAM...], not %r" % u)
            self.users[email] = set(t for t in teams.split(",") if t)
        self.clusters = [Cluster(c) for c in args.cluster]
        self.mounts = []
        for m in args.mount:
            path, sep, local = m.partition(":")
            if not sep or not path.startswith("/") or not os.path.isdir(local):
                raise SystemExit("dlts_server: --mount wants /CONTAINER/PATH:EXISTING_LOCAL_DIR, not %r" % m)
            self.mounts.append((path, os.path.abspath(local)))
        self.jobs = {}  # id -> Job, in submission order
        self.log_dir = args.log_dir or tempfile.mkdtemp(prefix="dlts-server-logs-")
        self.bind = can_bind(args.no_bind)

    def cluster(self, name):
        if name == ".default" and self.clusters:
            return self.clusters[0]
        c = next((c for c in self.clusters if c.name == name), None)
        if c is None:
            raise Refusal(404, "Cluster is not found")
        return c

    def password(self, email):
        return hashlib.md5(("%s:%s" % (email, self.master)).encode("utf-8")).hexdigest()


# ---- a job's life ----

def start(st, job):
    """runs cmd (st.cond held)"""
    b = job.body
    env = dict(os.environ)
    for e in b.get("env") or []:
        env[e["name"]] = e["value"]
    env.update({"DLWS_JOB_ID": job.id, "DLTS_JOB_ID": job.id, "DLWS_USER_EMAIL": job.user, "DLWS_VC_NAME": job.team,
                "DLWS_NUM_GPU_PER_WORKER": str(job.gpu), "CUDA_VISIBLE_DEVICES": ",".join(map(str, job.gpus))})
    job.output = os.path.join(st.log_dir, job.id + ".log")
    job.started, job.finished, job.code, job.error = time.time(), None, None, ""
    try:
        with open(job.output, "ab") as out:
            job.proc = subprocess.Popen(mounted_argv(b["cmd"], st.mounts, st.bind, "dlts-job"), env=env,
                                        cwd=st.args.workdir, stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as e:
        job.error, job.finished = "the job could not start: %s" % e, time.time()
        return False
    return True


def wait_proc(st, job):
    """waits for the job's process with st.cond released; its exit code"""
    proc = job.proc
    st.cond.release()
    try:
        return proc.wait()
    finally:
        st.cond.acquire()


def release(st, job):
    job.cluster.used.difference_update(job.gpus)
    job.gpus = []
    st.cond.notify_all()


def run_job(st, job):
    """the job's states, in a thread of its own; PUT .../status changes job.status to
    killing, pausing or (from paused) unapproved and notifies"""
    a = st.args
    with st.cond:
        while True:
            s = job.status
            if s in ("unapproved", "scheduling"):
                st.cond.wait_for(lambda: job.status != s, a.state_seconds)
                if job.status != s:
                    continue
                if s == "unapproved":
                    job.set("queued")
                elif start(st, job):
                    job.set("running")
                else:
                    release(st, job)
                    job.set("failed")
                    return
            elif s == "queued":
                gpus = job.cluster.take(job.gpu)
                if gpus is None:
                    st.cond.wait(0.2)
                    continue
                job.gpus = gpus
                job.set("scheduling")
            elif s == "running":
                code = wait_proc(st, job)
                job.code, job.finished = code, time.time()
                release(st, job)
                if job.status == "running":
                    if code != 0:
                        job.error = "cmd exited with code %d" % code
                    job.set("finished" if code == 0 else "failed")
                    st.cond.notify_all()
                    return
            elif s in ("killing", "pausing"):
                if job.proc is not None and job.proc.poll() is None:
                    job.code = wait_proc(st, job)
                    job.finished = time.time()
                release(st, job)
                st.cond.wait_for(lambda: job.status != s, a.state_seconds)  # the job manager takes a moment
                if job.status != s:  # pausing, then killing
                    continue
                job.set("killed" if s == "killing" else "paused")
                job.proc = None
                st.cond.notify_all()
                if s == "killing":
                    return
            elif s == "paused":
                st.cond.wait_for(lambda: job.status != "paused")
            else:
                return


def change_status(st, job, job_id, want):
    """DLTS's job ops on job (None: not the user's or not known): (result text, the
    processes to stop)"""
    ops = {"killing": ("Kill", "scheduled to be terminated", ACTIVE),
           "pausing": ("pause", "scheduled to be paused", ("unapproved", "queued", "scheduling", "running")),
           "queued": ("resume", "scheduled to be resumed", ("paused",)),
           "approved": ("approve", None, ("unapproved",))}
    verb, done, sources = ops[want]
    if job is None or job.status not in sources:
        return "Cannot %s the job. Job ID:%s" % (verb, job_id[:64]), []
    procs = []
    if want in ("killing", "pausing"):
        job.set(want)
        if job.proc is not None and job.proc.poll() is None:
            procs = [job.proc]
    elif want == "queued":
        job.set("unapproved")
    else:
        job.set("queued")
    st.cond.notify_all()
    return ("Success, the job is %s." % done) if done else "Success, the job has been approved.", procs


# ---- checks of a submission ----

def check_submit(st, cluster, user, b):
    """None, or why DLTS (or the double, where stricter) refuses the job body b"""
    def bad_str(k):
        return not isinstance(b.get(k), str) or not b[k].strip()
    if bad_str("jobName"):
        return "ERROR: Job name cannot be empty"
    if bad_str("vcName"):
        return "ERROR: VC name cannot be empty"
    if b.get("team") not in (None, b["vcName"]):
        return "ERROR: team and vcName differ"
    if bad_str("userName") or b["userName"] != user:
        return "ERROR: userName must be the authenticated user %s" % user
    if b["vcName"] not in st.users.get(user, ()):
        return "Access Denied!"
    for k in ("image", "cmd"):
        if bad_str(k):
            return "ERROR: %s cannot be empty" % k
    g = b.get("resourcegpu")
    if not isinstance(g, int) or isinstance(g, bool) or g < 0:
        return "ERROR: resourcegpu must be an integer >= 0"
    if b.get("gpuType") != cluster.gpu_type:
        return "ERROR: gpuType must be the cluster's GPU type %s" % cluster.gpu_type
    if b.get("jobtrainingtype") != "RegularJob":
        return "ERROR: jobtrainingtype must be RegularJob (PSDistJob is not served here)"
    if b.get("jobType", "training") != "training":
        return "ERROR: jobType must be training"
    if "preemptionAllowed" in b:
        try:
            to_bool(b["preemptionAllowed"])
        except ValueError:
            return "ERROR: preemptionAllowed must be True or False"
    ports = b.get("interactivePorts", [])
    if not isinstance(ports, list) or not all(
            str(p).isdigit() and 40000 <= int(p) <= 49999 for p in ports):
        return "ERROR: interactivePorts must be ports in 40000-49999"
    env = b.get("env", [])
    if not isinstance(env, list) or not all(isinstance(e, dict) and isinstance(e.get("name"), str) and e["name"]
                                            and isinstance(e.get("value"), str) for e in env):
        return "ERROR: env must be a list of {name, value} strings"
    mps = b.get("mountpoints", [])
    if not isinstance(mps, list) or not all(isinstance(m, dict) and all(k in m for k in (
            "name", "enabled", "containerPath", "hostPath")) for m in mps):
        return "ERROR: mountpoints must be a list of {name, enabled, containerPath, hostPath}"
    for k, what in (("jobPath", "job"), ("workPath", "work"), ("dataPath", "data")):
        v = b.get(k, "")
        if not isinstance(v, str):
            return "ERROR: invalided %s directory" % what
        if ".." in v:
            return "ERROR: '..' cannot be used in %s directory" % what
        if v.startswith("/") or v.startswith("\\"):
            return "ERROR: %s directory should not start with '/' or '\\\\' " % what
    return None


def check_endpoints(b):
    """None, or (who, message) of DLTS's refusal of an endpoints body: who is "dashboard"
    (its schema) or "rest" (the REST API behind it)"""
    if not isinstance(b, dict) or "endpoints" not in b:
        return "dashboard", " should have required property 'endpoints'"
    eps = b["endpoints"]
    if not isinstance(eps, list):
        return "dashboard", ".endpoints should be array"
    for i, e in enumerate(eps):
        ok = e in ENDPOINT_NAMES if isinstance(e, str) else (
            isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("podPort"), (int, float))
            and not isinstance(e.get("podPort"), bool))
        if not ok:
            return "dashboard", ".endpoints[%d] should match exactly one schema in oneOf" % i
    for e in eps:
        if isinstance(e, dict):
            if not 40000 <= e["podPort"] <= 49999:
                return "rest", "Bad request, interactive podPort should in range 40000-49999: %s" % eps
            if len(e["name"]) > 16:
                return "rest", "Bad request, interactive port name length shoule be less than 16: %s" % eps
    return None


# ---- the HTTP side ----

class Handler(JsonHandler):
    name = "dlts_server"

    def body(self):
        return self.raw_body

    def answer(self, code, body, ctype):
        if getattr(self, "drop_answer", False):
            return self.drop()
        data = body.encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def json(self, obj):
        self.answer(200, json.dumps(obj), "application/json; charset=utf-8")

    def text(self, obj):
        """the REST API's JSON as the dashboard relays it: text"""
        self.answer(200, json.dumps(obj) + "\n", "text/plain; charset=utf-8")

    def refuse(self, r):
        with self.st.lock:
            k = "%d %s" % (r.status, r.text[:60])
            self.st.stats["refused"][k] = self.st.stats["refused"].get(k, 0) + 1
        self.answer(r.status, r.text, r.ctype)

    def injected(self, action):
        st, a = self.st, self.st.args
        with st.lock:
            f = next_fault(st, action)
            mode, status, delay = f or (None, 0, 0)
            if not f:
                r = st.rng.random()
                if r < a.drop_rate:
                    mode = "drop"
                elif r < a.drop_rate + a.drop_after_rate:
                    mode = "drop_after"
                elif r < a.drop_rate + a.drop_after_rate + a.fail_rate:
                    mode, status = "status", st.rng.choice((500, 502, 503))
                elif st.rng.random() < a.slow_rate:
                    delay = a.slow_seconds
                if mode or delay:
                    st.stats["injected"] += 1
        if self.fault_dropped(mode, delay):
            return True
        if mode == "status":
            self.refuse(Refusal(status or 503))
            return True
        return False

    def authenticate(self, q):
        st = self.st
        email = q.get("email")
        password = q.get("password", q.get("token"))
        if email is None or not password:
            raise Refusal(403)
        if not hmac.compare_digest(password.lower().encode(), st.password(email).encode()):
            raise Refusal(403, "Invalid token")
        return email

    def route(self, method, segs):
        """(action, handler, args) of /api/... path segments"""
        if segs[:1] == ["v2"]:
            s = segs[1:]
            if len(s) == 4 and s[0] == "clusters" and s[2] == "jobs" and method == "GET":
                return "get", self.get_job, (s[1], s[3])
            if len(s) == 5 and s[0] == "clusters" and s[2] == "teams" and s[4] == "jobs" and method == "GET":
                return "list", self.list_jobs, (s[1], s[3])
            return None, None, ()
        s = segs
        if len(s) == 4 and s[0] == "teams" and s[2] == "clusters" and method == "GET":
            return "cluster", self.get_cluster, (s[3], s[1])
        if len(s) == 3 and s[0] == "clusters" and s[2] == "jobs" and method == "POST":
            return "submit", self.submit, (s[1],)
        if len(s) == 5 and s[0] == "clusters" and s[2] == "jobs" and s[4] == "status" and method == "PUT":
            return "status", self.put_status, (s[1], s[3])
        if len(s) == 5 and s[0] == "clusters" and s[2] == "jobs" and s[4] == "endpoints" and method in ("GET", "POST"):
            return "endpoints", self.endpoints, (s[1], s[3], method)
        return None, None, ()

    def api(self, method, raw_path, q):
        st = self.st
        segs = [urllib.parse.unquote(x) for x in raw_path[len("/api/"):].rstrip("/").split("/")]
        action, fn, args = self.route(method, segs)
        with st.lock:
            st.stats["calls"] += 1
        if self.injected(action):
            return
        try:
            if fn is None:
                raise Refusal(404)
            st.cluster(args[0])  # the dashboard's clusterId parameter, checked before the user
            user = self.authenticate(q)
            with st.lock:
                st.stats["actions"][action] = st.stats["actions"].get(action, 0) + 1
            fn(user, q, *args)
        except Refusal as r:
            self.refuse(r)

    def get_cluster(self, user, q, cluster_name, team):
        st = self.st
        c = st.cluster(cluster_name)
        if team not in st.users.get(user, ()):
            raise Refusal(404, "Team is not found")
        with st.lock:
            used = len(c.used)
            jobs = sum(1 for j in st.jobs.values() if j.cluster is c and j.team == team and j.status in ACTIVE)
        t = c.gpu_type
        self.json({"vcName": team, "quota": json.dumps({t: c.gpus}),
                   "metadata": json.dumps({t: {"num_gpu_per_node": c.per_node}}),
                   "resourceQuota": json.dumps({"gpu": {t: c.gpus}}), "gpu_capacity": {t: c.gpus},
                   "gpu_used": {t: used}, "gpu_available": {t: c.gpus - used}, "gpu_avaliable": {t: c.gpus - used},
                   "gpu_unschedulable": {t: 0}, "available_job_num": jobs, "AvaliableJobNum": jobs,
                   "node_status": [{"name": "node-0", "gpuType": t, "gpu_capacity": {t: c.gpus},
                                    "gpu_used": {t: used}, "InternalIP": "127.0.0.1"}]})

    def submit(self, user, q, cluster_name):
        st = self.st
        c = st.cluster(cluster_name)
        raw = self.body()
        if "json" not in self.headers.get("Content-Type", ""):
            b = {}
        else:
            try:
                b = json.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                raise Refusal(400, str(e)[:200])
            if not isinstance(b, (dict, list)):
                raise Refusal(400, "invalid JSON, only supports object and array")
        if not isinstance(b, dict):
            raise Refusal(400, " should be object")
        if not b.get("team") and b.get("vcName"):
            b["team"] = b["vcName"]
        if not isinstance(b.get("team"), str):
            raise Refusal(400, " should have required property 'team'" if "team" not in b else ".team should be string")
        b.setdefault("vcName", b["team"])
        why = check_submit(st, c, user, b)
        if why:
            with st.lock:
                st.stats["refused"][why] = st.stats["refused"].get(why, 0) + 1
            return self.text({"error": "Cannot create job!" + why})
        with st.cond:
            job = Job(str(uuid.uuid4()), b, raw.decode("utf-8"), c, user)
            st.jobs[job.id] = job
            st.stats["created"] += 1
        threading.Thread(target=run_job, args=(st, job), daemon=True).start()
        self.text({"jobId": job.id})

    def owned(self, user, cluster_name, job_id):
        with self.st.lock:
            j = self.st.jobs.get(job_id)
        c = self.st.cluster(cluster_name)
        if j is None or j.cluster is not c or j.user != user:
            return None
        return j

    def get_job(self, user, q, cluster_name, job_id):
        j = self.owned(user, cluster_name, job_id)
        with self.st.lock:
            self.json(j.view() if j else {})

    def list_jobs(self, user, q, cluster_name, team):
        st = self.st
        c = st.cluster(cluster_name)
        limit = q.get("limit", "")
        limit = int(limit) if limit.isdigit() and int(limit) > 0 else 10
        everyone = q.get("user") == "all" and team in st.users.get(user, ())
        with st.lock:
            jobs = [j for j in st.jobs.values() if j.cluster is c and j.team == team and (everyone or j.user == user)]
            jobs.sort(key=lambda j: j.created, reverse=True)
            active = [j for j in jobs if j.status in ACTIVE]
            ended = [j for j in jobs if j.status not in ACTIVE][:limit]
            out = [j.view() for j in sorted(active + ended, key=lambda j: j.created, reverse=True)]
        self.json(out)

    def put_status(self, user, q, cluster_name, job_id):
        st = self.st
        try:
            b = json.loads(self.body().decode("utf-8") or "{}")
        except (ValueError, UnicodeDecodeError) as e:
            raise Refusal(400, str(e)[:200])
        if not isinstance(b, dict) or "status" not in b:
            raise Refusal(400, " should have required property 'status'")
        if b["status"] not in ("approved", "killing", "pausing", "queued"):
            raise Refusal(400, ".status should be equal to one of the allowed values")
        j = self.owned(user, cluster_name, job_id)
        with st.cond:
            text, procs = change_status(st, j, job_id, b["status"])
        kill_groups(procs, st.args.kill_grace)
        self.text({"result": text})

    def endpoints(self, user, q, cluster_name, job_id, method):
        st = self.st
        j = self.owned(user, cluster_name, job_id)
        if method == "GET":
            with st.lock:
                out = [] if j is None else [self.endpoint_view(j, e) for e in j.endpoints.values()]
            return self.json(out)
        try:
            b = json.loads(self.body().decode("utf-8") or "{}")
        except (ValueError, UnicodeDecodeError) as e:
            raise Refusal(400, str(e)[:200])
        bad = check_endpoints(b)
        if bad and bad[0] == "dashboard":
            raise Refusal(400, bad[1])
        if bad:
            raise self.relayed(400, bad[1])
        if j is None:
            with st.lock:
                known = job_id in st.jobs
            if known:
                raise self.relayed(403, "You are not authorized to enable endpoint for job %s" % job_id[:64])
            raise self.relayed(404, "Job %s cannot be found in database" % job_id[:64])
        with st.lock:
            for e in b["endpoints"]:
                if isinstance(e, str):
                    eid = "e-%s-%s" % (j.id, e)
                    ep = {"id": eid, "name": e}
                else:
                    eid = "e-%s-port-%d" % (j.id, int(e["podPort"]))
                    ep = {"id": eid, "name": e["name"], "podPort": int(e["podPort"])}
                if eid not in j.endpoints:
                    ep.update({"jobId": j.id, "podName": j.id, "username": j.user.split("@")[0], "status": "pending",
                               "hostNetwork": False})
                    j.endpoints[eid] = ep
            out = dict(j.endpoints)
        self.text(out)

    def relayed(self, status, message):
        """the REST API's refusal of an endpoint: as it answers it, or (--dashboard-relay) as
        the dashboard relays it: 403 kept (without a body), any other 502 Bad Gateway"""
        if not self.st.args.dashboard_relay:
            return Refusal(status, message, rest=True)
        return Refusal(403, "") if status == 403 else Refusal(502)

    def endpoint_view(self, j, e):
        """an endpoint as DLTS lists it; running (port, nodeName) once the job runs: the job
        is a local process, so its pod port is reachable as it is on 127.0.0.1"""
        v = {k: e[k] for k in ("id", "name", "username", "status", "hostNetwork", "podName")}
        v["domain"] = self.st.args.domain
        if "podPort" in e:
            v["podPort"] = e["podPort"]
        if j.status == "running":
            v["status"] = "running"
            v["port"] = e.get("podPort", {"ssh": 22, "ipython": 8888, "tensorboard": 6006, "theia": 3000}.get(
                e["name"], 0))
            v["nodeName"] = "127.0.0.1"
        return v

    # -- test controls --
    def control(self, method, path):
        st = self.st
        data = self.body()
        if path == "/_test/stats":
            with st.lock:
                s = json.loads(json.dumps(st.stats))
                s["jobs"] = {i: {"jobName": j.name, "jobStatus": j.status} for i, j in st.jobs.items()}
                s["gpus_used"] = {c.name: sorted(c.used) for c in st.clusters}
            return self.json(s)
        if path == "/_test/fail" and method == "POST":
            set_fault(st, data)
            return self.json({"ok": True})
        if path.startswith("/_test/job/"):
            with st.lock:
                j = st.jobs.get(path[len("/_test/job/"):])
                if j is not None:
                    out = {"body": j.raw, "jobStatus": j.status, "history": list(j.history), "gpus": list(j.gpus),
                           "pid": j.proc.pid if j.proc else None}
                    if j.output and os.path.exists(j.output):
                        with open(j.output, "rb") as f:
                            out["output"] = f.read().decode("utf-8", "replace")
                    return self.json(out)
            return self.refuse(Refusal(404, "no job " + path[11:75]))
        return self.refuse(Refusal(404))

    def dispatch(self, method):
        self.raw_body = JsonHandler.body(self)
        raw_path, _, raw_query = self.path.partition("?")
        if raw_path.startswith("/_test/"):
            return self.control(method, raw_path)
        if not raw_path.startswith("/api/"):
            return self.refuse(Refusal(404))
        self.api(method, raw_path, dict(urllib.parse.parse_qsl(raw_query, keep_blank_values=True)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common_args(ap, "cwd of the jobs' commands")
    ap.add_argument("--master-token", required=True, help="a user's password is md5('<email>:<this>') in hex")
    ap.add_argument("--user", action="append", default=[], help="EMAIL:TEAM[,TEAM...] a user and its teams")
    ap.add_argument("--cluster", action="append", required=True,
                    help="NAME:GPUTYPE:GPUS[:PER_NODE] a cluster (the first is .default)")
    ap.add_argument("--mount", action="append", default=[],
                    help="/CONTAINER/PATH:LOCAL_DIR the shared filesystem, where jobs see it and where it is here")
    ap.add_argument("--domain", default="localhost", help="the endpoints' domain")
    ap.add_argument("--log-dir", help="where the jobs' output is kept (default: a new temporary directory)")
    ap.add_argument("--state-seconds", type=float, default=0.05, help="seconds in each state before running")
    ap.add_argument("--kill-grace", type=float, default=5.0, help="seconds from SIGTERM to SIGKILL on kill/pause")
    ap.add_argument("--dashboard-relay", action="store_true",
                    help="answer the REST API's refusals of endpoints as DLTS's dashboard relays them (502, 403)")
    ap.add_argument("--fail-rate", type=float, default=0.0, help="share of API requests answered 500/502/503")
    ap.add_argument("--drop-rate", type=float, default=0.0, help="share of API requests dropped unanswered")
    ap.add_argument("--drop-after-rate", type=float, default=0.0,
                    help="share of API requests handled and then dropped unanswered")
    ap.add_argument("--slow-rate", type=float, default=0.0, help="share of API requests answered --slow-seconds late")
    ap.add_argument("--slow-seconds", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=None)
    st = State(ap.parse_args())
    serve(Handler, st, lambda: [j.proc for j in st.jobs.values() if j.proc],
          "clusters %s; %s" % (", ".join("%s (%d %s)" % (c.name, c.gpus, c.gpu_type) for c in st.clusters),
                               "storage bind-mounted" if st.bind else "mount paths rewritten"))


if __name__ == "__main__":
    main()

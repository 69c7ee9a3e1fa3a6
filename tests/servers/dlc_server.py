#!/usr/bin/python3
"""A strict test double of Alibaba Cloud PAI-DLC (API version 2020-12-03), for trialq's tests.

PAI-DLC cannot run on the test machines, so this server speaks the part of its ROA API
that a trial platform needs, as Alibaba's API reference describes it, behind Alibaba's
OpenAPI gateway rules, and runs each job's pods as local processes:

  POST /api/v1/jobs                              CreateJob   -> {"RequestId", "JobId"}
  GET  /api/v1/jobs/{JobId}                      GetJob      -> {"JobId", "DisplayName", "Status", "Pods", ...}
  POST /api/v1/jobs/{JobId}/stop                 StopJob     -> {"RequestId", "JobId"}
  GET  /api/v1/jobs?DisplayName=&Status=&...     ListJobs    -> {"Jobs": [...], "TotalCount", "RequestId"}
  GET  /api/v1/jobs/{JobId}/pods/{PodId}/logs    GetPodLogs  -> {"JobId", "PodId", "Logs": [...], "RequestId"}

Every request must carry Alibaba's signature V3 ("Request syntax and signature method V3"):
headers host, x-acs-action (the action of the route), x-acs-version (2020-12-03),
x-acs-date (UTC, yyyy-MM-ddTHH:mm:ssZ, at most --max-skew seconds off, 15 minutes as
documented), x-acs-signature-nonce (unique: a nonce seen within the date's window again is
a replay), x-acs-content-sha256 (the body's SHA-256) and
  Authorization: ACS3-HMAC-SHA256 Credential=<AccessKeyId>,SignedHeaders=<...>,Signature=<hex>
where SignedHeaders lists, lower case, sorted, every x-acs-* header sent, host, and
content-type when sent. The signature is recomputed from the request as received (each
path segment and query name/value percent-encoded as RFC 3986 with only A-Z a-z 0-9 - _ . ~
kept, the query sorted by name, headers trimmed). Refusals, with the gateway's documented
codes ({"RequestId", "HostId", "Code", "Message"}):
  400 IncompleteSignature            no or a malformed Authorization, a header left unsigned
  400 InvalidSignatureMethod         an algorithm other than ACS3-HMAC-SHA256
  404 InvalidAccessKeyId.NotFound    an AccessKey ID not given with --access-key
  400 InvalidTimeStamp.Format        x-acs-date missing or not yyyy-MM-ddTHH:mm:ssZ
  400 InvalidTimeStamp.Expired       x-acs-date more than --max-skew seconds off
  400 SignatureDoesNotMatch          a wrong secret, anything changed after signing
  400 SignatureNonceUsed             a nonce used again
  404 InvalidApi.NotFound            no such route, or x-acs-action not the route's action
  400 InvalidVersion                 x-acs-version is not 2020-12-03
Faults (no signature checked first): 503 ServiceUnavailable, 500 InternalError, throttling
(Throttling.User, HTTP --throttle-status: 400 in Alibaba's table of common errors, some
gateways answer 429), a connection dropped before the request is handled, and one dropped
after it was handled (the job exists, the client never hears of it).

Jobs walk Creating -> Queuing -> Running -> Succeeded | Failed (by the pods' exit codes:
one failed pod fails the job); StopJob: Stopping -> Stopped. A second job with the same
DisplayName is accepted, as DLC does (a client finds its job by name, ListJobs, itself;
ListJobs' DisplayName filter matches a part of the name, as the console's search does).
Each pod (JobSpecs[].PodCount of each JobSpec) runs UserCommand with bash, with the
job's Envs, its output kept for GetPodLogs; the data sources (--data-source ID:MOUNT:DIR)
a job names in DataSources are where the pod sees them: bind-mounted at their mount path
in a private mount namespace when this server may (root), else the mount paths are
rewritten to the local directories in the command.

Where Alibaba documents no behaviour the double chooses, and says so: an unknown JobId
or PodId is 404 JobNotFound / PodNotFound, a bad request body 400 InvalidParameter or
Missing<Name>, StopJob of a finished job changes nothing (200), ListJobs in a WorkspaceId
not given with --workspace is 400 InvalidParameter (as CreateJob in it).

Test controls (no signature; only for the test that started the server):
  GET  /_test/stats               counters per action and per refusal code (fault_served:
                                  requests that met the fault /_test/fail set last), the jobs' states
  GET  /_test/job/{JobId}         the CreateJob body as received, and the job's state
  POST /_test/fail {"mode": "status"|"throttle"|"drop"|"drop_after"|"delay", "status": 503,
                    "count": N | "seconds": S, "delay": D, "action": "CreateJob"}
                                  the next N requests (of that action) answered so: "status"
                                  (500 InternalError, else ServiceUnavailable, 503 by default),
                                  "throttle" (Throttling.User, --throttle-status by default),
                                  dropped before or after they are handled, or delayed D s
  POST /_test/stop/{JobId}        stop a job as the owner would in the console
"""
import argparse
import datetime
import hashlib
import hmac
import json
import os
import re
import secrets
import string
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

from jobserver import JsonHandler, ServerState, can_bind, common_args, kill_groups, mounted_argv, next_fault, serve, set_fault

API_VERSION = "2020-12-03"
ALGORITHM = "ACS3-HMAC-SHA256"
FINAL = ("Succeeded", "Failed", "Stopped")
JOB_TYPES = ("TFJob", "PyTorchJob", "MPIJob", "XGBoostJob", "OneFlowJob", "ElasticBatchJob", "SlurmJob",
             "RayJob", "DataJuicerJob")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,256}$")
UNRESERVED = frozenset(string.ascii_letters + string.digits + "-_.~")


class ApiError(Exception):
    def __init__(self, status, code, message):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


# ---- the signature, as Alibaba documents it ----

def pct(s):
    """RFC 3986 percent-encoding of the signature: only A-Z a-z 0-9 - _ . ~ stay."""
    return "".join(c if c in UNRESERVED else "".join("%%%02X" % b for b in c.encode("utf-8")) for c in s)


def canonical_uri(raw_path):
    return "/".join(pct(urllib.parse.unquote(seg)) for seg in raw_path.split("/"))


def parse_query(raw_query):
    """[(name, value)] decoded; '+' is a plus sign (RFC 3986), as the signer encodes it %2B."""
    out = []
    for piece in raw_query.split("&"):
        if piece:
            name, _, value = piece.partition("=")
            out.append((urllib.parse.unquote(name), urllib.parse.unquote(value)))
    return out


def canonical_query(pairs):
    return "&".join(pct(n) + "=" + pct(v) for n, v in sorted(pairs))


def utc(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---- jobs ----

class Job:
    def __init__(self, job_id, body, workspace):
        self.id = job_id
        self.body = body
        self.name = body["DisplayName"]
        self.type = body["JobType"]
        self.workspace = workspace
        self.status = "Creating"
        self.reason_code = self.reason_message = ""
        self.created = time.time()
        self.running_at = self.finished_at = None
        self.history = [["Creating", self.created, None]]
        self.pods = []  # {"PodId", "Type", "Status", "proc", "log", "created", "started", "finished", "code"}
        self.stop_requested = False
        for spec in body["JobSpecs"]:
            for i in range(int(spec.get("PodCount", 1))):
                self.pods.append({"PodId": "%s-%s-%d" % (job_id, spec["Type"].lower(), i), "Type": spec["Type"],
                                  "PodUid": str(uuid.uuid4()), "Status": "Pending", "proc": None, "log": None,
                                  "created": self.created, "started": None, "finished": None, "code": None})

    def set_status(self, status, code="", message=""):
        now = time.time()
        self.history[-1][2] = now
        self.history.append([status, now, None])
        self.status = status
        if code:
            self.reason_code, self.reason_message = code, message
        if status == "Running":
            self.running_at = now
        if status in FINAL:
            self.finished_at = now

    def summary(self):
        b = self.body
        j = {"JobId": self.id, "DisplayName": self.name, "JobType": self.type, "Status": self.status,
             "ReasonCode": self.reason_code, "ReasonMessage": self.reason_message,
             "GmtCreateTime": utc(self.created), "GmtSubmittedTime": utc(self.created),
             "UserCommand": b.get("UserCommand"), "JobSpecs": b.get("JobSpecs"), "WorkspaceId": self.workspace,
             "ResourceId": b.get("ResourceId", ""), "Envs": b.get("Envs") or {},
             "Duration": int((self.finished_at or time.time()) - (self.running_at or time.time()))
             if self.running_at else 0}
        if self.running_at:
            j["GmtRunningTime"] = utc(self.running_at)
        if self.finished_at:
            j["GmtFinishTime"] = utc(self.finished_at)
            j[{"Succeeded": "GmtSuccessedTime", "Failed": "GmtFailedTime",
               "Stopped": "GmtStoppedTime"}[self.status]] = utc(self.finished_at)
        return j

    def full(self):
        j = self.summary()
        j["DataSources"] = [{"DataSourceId": d.get("DataSourceId"), "MountPath": d.get("MountPath", ""),
                             "Uri": d.get("Uri", "")} for d in self.body.get("DataSources") or []]
        j["Pods"] = [{"PodId": p["PodId"], "PodUid": p["PodUid"], "Type": p["Type"], "Status": p["Status"],
                      "Ip": "127.0.0.1", "GmtCreateTime": utc(p["created"]),
                      **({"GmtStartTime": utc(p["started"])} if p["started"] else {}),
                      **({"GmtFinishTime": utc(p["finished"])} if p["finished"] else {})} for p in self.pods]
        j["StatusHistory"] = [{"Status": s, "StartTime": utc(a), **({"EndTime": utc(e)} if e else {})}
                              for s, a, e in self.history]
        return j


class State(ServerState):
    def __init__(self, args):
        super().__init__(args, {"calls": 0, "injected": 0, "fault_served": 0, "created": 0, "actions": {}, "refused": {}})
        self.keys = {}
        for k in args.access_key:
            kid, sep, secret = k.partition(":")
            if not sep or not kid or not secret:
                sys.exit("dlc_server: --access-key wants ID:SECRET")
            self.keys[kid] = secret
        self.sources = {}  # data source id -> (default mount path, local dir)
        for d in args.data_source:
            parts = d.split(":", 2)
            if len(parts) != 3 or not parts[1].startswith("/") or not os.path.isdir(parts[2]):
                sys.exit("dlc_server: --data-source wants ID:/MOUNT/PATH:EXISTING_LOCAL_DIR, not %r" % d)
            self.sources[parts[0]] = (parts[1].rstrip("/") or "/", os.path.abspath(parts[2]))
        self.workspaces = set(args.workspace)
        self.jobs = {}  # id -> Job, in creation order
        self.nonces = {}  # nonce -> time it may be forgotten
        self.log_dir = args.log_dir or tempfile.mkdtemp(prefix="dlc-server-logs-")
        self.bind = can_bind(args.no_bind)

    def running_count(self):
        return sum(1 for j in self.jobs.values() if j.status in ("Running", "Stopping") and j.running_at)


def pod_argv(st, job):
    """bash running UserCommand with the job's data sources where the pod expects them"""
    mounts = []
    for d in job.body.get("DataSources") or []:
        mount, local = st.sources[d["DataSourceId"]]
        mounts.append((d.get("MountPath") or mount, local))
    return mounted_argv(job.body["UserCommand"], mounts, st.bind, "dlc-pod")


def run_job(st, job):
    a = st.args
    time.sleep(a.creating_seconds)
    with st.lock:
        if job.stop_requested:
            job.set_status("Stopped")
            return
        job.set_status("Queuing")
    time.sleep(a.queuing_seconds)
    with st.cond:
        while not job.stop_requested and a.max_running and st.running_count() >= a.max_running:
            st.cond.wait(0.2)
        if job.stop_requested:
            job.set_status("Stopped")
            return
        env = dict(os.environ)
        env.update({str(k): str(v) for k, v in (job.body.get("Envs") or {}).items()})
        for p in job.pods:
            p["log"] = os.path.join(st.log_dir, p["PodId"] + ".log")
            with open(p["log"], "wb") as out:
                if a.pod_banner:  # what a container runtime prints before the command
                    out.write((a.pod_banner.replace("{JobId}", job.id).replace("{PodId}", p["PodId"]) + "\n").encode())
                    out.flush()
                p["proc"] = subprocess.Popen(pod_argv(st, job), env=env, cwd=a.workdir, stdin=subprocess.DEVNULL,
                                             stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            p["Status"], p["started"] = "Running", time.time()
        job.set_status("Running")
    for p in job.pods:
        p["code"] = p["proc"].wait()
        with st.lock:
            p["finished"] = time.time()
            p["Status"] = "Stopped" if job.stop_requested else ("Succeeded" if p["code"] == 0 else "Failed")
    with st.cond:
        bad = [p for p in job.pods if p["code"] != 0]
        if job.stop_requested:
            job.set_status("Stopped")
        elif bad:
            job.set_status("Failed", "JobFailed", "pod %s exited with code %d" % (bad[0]["PodId"], bad[0]["code"]))
        else:
            job.set_status("Succeeded")
        st.cond.notify_all()


def stop_job(st, job):
    with st.lock:
        if job.status in FINAL or job.stop_requested:
            return
        job.stop_requested = True
        job.set_status("Stopping")
        procs = [p["proc"] for p in job.pods if p["proc"]]
    kill_groups(procs, st.args.stop_grace)  # none yet: run_job sees stop_requested


# ---- checks of a CreateJob body (Alibaba's CreateJob reference) ----

def check_create(st, b):
    if not isinstance(b, dict):
        raise ApiError(400, "InvalidParameter", "The request body must be a JSON object.")
    for k in ("DisplayName", "JobType", "JobSpecs", "UserCommand"):
        if b.get(k) in (None, "", []):
            raise ApiError(400, "Missing" + k, "%s is mandatory for this action." % k)
    if not isinstance(b["DisplayName"], str) or not NAME_RE.match(b["DisplayName"]):
        raise ApiError(400, "InvalidParameter", "The specified parameter DisplayName is not valid: at most 256 "
                       "digits, letters, '_', '.' and '-'.")
    if b["JobType"] not in JOB_TYPES:
        raise ApiError(400, "InvalidParameter", "The specified parameter JobType is not valid (case-sensitive: %s)."
                       % ", ".join(JOB_TYPES))
    if not isinstance(b["UserCommand"], str):
        raise ApiError(400, "InvalidParameter", "The specified parameter UserCommand is not valid.")
    specs = b["JobSpecs"]
    if not isinstance(specs, list):
        raise ApiError(400, "InvalidParameter", "The specified parameter JobSpecs is not valid: a list.")
    for i, s in enumerate(specs):
        where = "JobSpecs.%d" % (i + 1)
        if not isinstance(s, dict):
            raise ApiError(400, "InvalidParameter", "The specified parameter %s is not valid." % where)
        if not isinstance(s.get("Type"), str) or not s["Type"]:
            raise ApiError(400, "Missing%s.Type" % where, "%s.Type is mandatory for this action." % where)
        if not isinstance(s.get("Image"), str) or not s["Image"]:
            raise ApiError(400, "Missing%s.Image" % where, "%s.Image is mandatory for this action." % where)
        pc = s.get("PodCount", 1)
        if not isinstance(pc, int) or isinstance(pc, bool) or pc < 1 or pc > 64:
            raise ApiError(400, "InvalidParameter", "The specified parameter %s.PodCount is not valid." % where)
        has_ecs, has_rc = bool(s.get("EcsSpec")), bool(s.get("ResourceConfig"))
        if has_ecs == has_rc:
            raise ApiError(400, "InvalidParameter", "%s needs exactly one of EcsSpec (public resources) and "
                           "ResourceConfig (a resource quota, with ResourceId)." % where)
        if has_ecs and (not isinstance(s["EcsSpec"], str) or not s["EcsSpec"].startswith("ecs.")):
            raise ApiError(400, "InvalidParameter", "The specified parameter %s.EcsSpec is not valid." % where)
        if has_rc:
            rc = s["ResourceConfig"]
            if not isinstance(rc, dict) or not b.get("ResourceId"):
                raise ApiError(400, "InvalidParameter", "%s.ResourceConfig needs a ResourceId." % where)
    ws = b.get("WorkspaceId")
    if ws is not None and not isinstance(ws, str):
        raise ApiError(400, "InvalidParameter", "The specified parameter WorkspaceId is not valid.")
    if st.workspaces and ws and ws not in st.workspaces:
        raise ApiError(400, "InvalidParameter", "The specified parameter WorkspaceId is not valid: no workspace %s."
                       % ws)
    envs = b.get("Envs")
    if envs is not None and not isinstance(envs, dict):
        raise ApiError(400, "InvalidParameter", "The specified parameter Envs is not valid: a map.")
    ds = b.get("DataSources") or []
    if not isinstance(ds, list):
        raise ApiError(400, "InvalidParameter", "The specified parameter DataSources is not valid.")
    for i, d in enumerate(ds):
        if not isinstance(d, dict) or d.get("DataSourceId") not in st.sources:
            raise ApiError(400, "InvalidParameter", "The specified parameter DataSources.%d.DataSourceId is not "
                           "valid: no data source %r." % (i + 1, d.get("DataSourceId") if isinstance(d, dict) else d))
        mp = d.get("MountPath")
        if mp is not None and (not isinstance(mp, str) or not mp.startswith("/")):
            raise ApiError(400, "InvalidParameter", "The specified parameter DataSources.%d.MountPath is not valid."
                           % (i + 1))


class Handler(JsonHandler):
    name = "dlc_server"

    def reply(self, code, obj):
        if getattr(self, "drop_answer", False):
            return self.drop()
        self.send_json(code, obj, "application/json;charset=utf-8", [("x-acs-request-id", obj.get("RequestId", ""))])

    def error(self, err):
        with self.st.lock:
            r = self.st.stats["refused"]
            r[err.code] = r.get(err.code, 0) + 1
        self.reply(err.status, {"RequestId": self.request_id, "HostId": self.headers.get("Host", ""),
                                "Code": err.code, "Message": err.message})

    # -- faults --
    def injected(self, action):
        """True when this request was answered (or dropped) here; may set drop_answer."""
        st, a = self.st, self.st.args
        with st.lock:
            f = next_fault(st, action)
            mode, status, delay = f or (None, 0, 0)
            if not f and action:
                r = st.rng.random()
                for m, rate in (("drop", a.drop_rate), ("drop_after", a.drop_after_rate),
                                ("throttle", a.throttle_rate), ("status", a.fail_rate)):
                    if r < rate:
                        mode, status = m, st.rng.choice((500, 503))
                        st.stats["injected"] += 1
                        break
                    r -= rate
        if self.fault_dropped(mode, delay):
            return True
        if mode == "throttle":
            self.error(ApiError(status or a.throttle_status, "Throttling.User",
                                "Request was denied due to user flow control."))
            return True
        elif mode == "status":
            status = status or 503
            self.error(ApiError(status, "ServiceUnavailable" if status == 503 else "InternalError",
                                "The request has failed due to a temporary failure of the server." if status == 503
                                else "The request processing has failed due to some unknown error, exception or "
                                "failure."))
            return True
        return False

    # -- the gateway --
    def route(self, method, path):
        segs = path.split("/")
        if segs[:4] != ["", "api", "v1", "jobs"]:
            return None, []
        rest = [urllib.parse.unquote(s) for s in segs[4:]]
        if not rest and method == "POST":
            return "CreateJob", []
        if not rest and method == "GET":
            return "ListJobs", []
        if len(rest) == 1 and rest[0] and method == "GET":
            return "GetJob", rest
        if len(rest) == 2 and rest[1] == "stop" and method == "POST":
            return "StopJob", rest[:1]
        if len(rest) == 4 and rest[1] == "pods" and rest[3] == "logs" and method == "GET":
            return "GetPodLogs", [rest[0], rest[2]]
        return None, []

    def authenticate(self, method, raw_path, raw_query, body):
        st, h = self.st, self.headers
        auth = h.get("Authorization")
        if not auth:
            raise ApiError(400, "IncompleteSignature", "The request signature does not conform to Aliyun standards: "
                           "no Authorization header.")
        alg, _, rest = auth.strip().partition(" ")
        if alg != ALGORITHM:
            raise ApiError(400, "InvalidSignatureMethod", "Specified signature method is not valid: %r." % alg[:40])
        parts = {}
        for item in rest.split(","):
            k, sep, v = item.strip().partition("=")
            if not sep or k in parts:
                raise ApiError(400, "IncompleteSignature", "The request signature does not conform to Aliyun "
                               "standards: the Authorization header is malformed.")
            parts[k] = v
        if set(parts) != {"Credential", "SignedHeaders", "Signature"} or not all(parts.values()):
            raise ApiError(400, "IncompleteSignature", "The request signature does not conform to Aliyun standards: "
                           "Authorization needs Credential, SignedHeaders and Signature.")
        secret = st.keys.get(parts["Credential"])
        if secret is None:
            raise ApiError(404, "InvalidAccessKeyId.NotFound", "Specified access key is not found.")
        date = h.get("x-acs-date")
        if not date or not DATE_RE.match(date):
            raise ApiError(400, "InvalidTimeStamp.Format", "Specified time stamp or date value is not well formatted.")
        try:
            t = datetime.datetime.strptime(date, "%Y-%m-%dT%H:%M:%SZ").replace(
                tzinfo=datetime.timezone.utc).timestamp()
        except ValueError:
            raise ApiError(400, "InvalidTimeStamp.Format", "Specified time stamp or date value is not well formatted.")
        if abs(time.time() - t) > st.args.max_skew:
            raise ApiError(400, "InvalidTimeStamp.Expired", "Specified time stamp or date value is expired.")
        signed = parts["SignedHeaders"].split(";")
        if signed != sorted(set(signed)) or any(s != s.lower() or not s for s in signed):
            raise ApiError(400, "IncompleteSignature", "The request signature does not conform to Aliyun standards: "
                           "SignedHeaders must be lower case, sorted and unique.")
        sent = {k.lower() for k in h.keys()}
        required = {"host", "x-acs-action", "x-acs-version", "x-acs-date", "x-acs-signature-nonce",
                    "x-acs-content-sha256"}
        for name, problem in ((sorted(required - sent), "is missing"),
                              (sorted((required | {k for k in sent if k.startswith("x-acs-") or k == "content-type"})
                                      - set(signed)), "is not signed"),
                              (sorted(set(signed) - sent), "is signed but not in the request")):
            if name:
                raise ApiError(400, "IncompleteSignature", "The request signature does not conform to Aliyun "
                               "standards: header %s %s." % (name[0], problem))
        body_hash = hashlib.sha256(body).hexdigest()
        cr = "\n".join([method, canonical_uri(raw_path), canonical_query(parse_query(raw_query)),
                        "".join("%s:%s\n" % (k, ",".join(v.strip() for v in h.get_all(k))) for k in signed),
                        ";".join(signed), body_hash])
        sts = ALGORITHM + "\n" + hashlib.sha256(cr.encode("utf-8")).hexdigest()
        want = hmac.new(secret.encode("utf-8"), sts.encode("utf-8"), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(want, parts["Signature"]):
            hint = "" if h.get("x-acs-content-sha256") == body_hash else \
                " (x-acs-content-sha256 is not the SHA-256 of the body)"
            raise ApiError(400, "SignatureDoesNotMatch", "Specified signature is not matched with our calculation%s. "
                           "server string to sign is:%s" % (hint, sts))
        nonce, now = h.get("x-acs-signature-nonce"), time.time()
        with st.lock:
            for n in [n for n, until in st.nonces.items() if until < now]:
                del st.nonces[n]
            if nonce in st.nonces:
                raise ApiError(400, "SignatureNonceUsed", "Specified signature nonce was used already.")
            st.nonces[nonce] = now + 2 * st.args.max_skew

    def handle_api(self, method):
        st = self.st
        self.request_id = str(uuid.uuid4()).upper()
        raw_path, _, raw_query = self.path.partition("?")
        body = self.body()
        with st.lock:
            st.stats["calls"] += 1
        action, ids = self.route(method, raw_path)
        if self.injected(action):
            return
        try:
            if action is None or self.headers.get("x-acs-action") != action:
                raise ApiError(404, "InvalidApi.NotFound", "Specified api is not found, please check your url and "
                               "method.")
            if self.headers.get("x-acs-version") != API_VERSION:
                raise ApiError(400, "InvalidVersion", "Specified parameter Version is not valid.")
            self.authenticate(method, raw_path, raw_query, body)
            with st.lock:
                acts = st.stats["actions"]
                acts[action] = acts.get(action, 0) + 1
            q = dict(parse_query(raw_query))
            self.reply(200, getattr(self, "do_" + action)(ids, q, body))
        except ApiError as err:
            self.error(err)

    def job(self, job_id):
        with self.st.lock:
            j = self.st.jobs.get(job_id)
        if j is None:
            raise ApiError(404, "JobNotFound", "The job %s is not found." % job_id[:64])
        return j

    def do_CreateJob(self, ids, q, body):
        if "json" not in self.headers.get("Content-Type", ""):
            raise ApiError(400, "InvalidParameter", "The request body must be JSON (Content-Type: application/json).")
        try:
            b = json.loads(body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise ApiError(400, "InvalidParameter", "The request body is not valid JSON.")
        check_create(self.st, b)
        st = self.st
        with st.lock:
            job_id = "dlc" + "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(13))
            job = Job(job_id, b, b.get("WorkspaceId") or (sorted(st.workspaces)[0] if st.workspaces else ""))
            job.raw = body.decode("utf-8")
            st.jobs[job_id] = job
            st.stats["created"] += 1
        threading.Thread(target=run_job, args=(st, job), daemon=True).start()
        return {"RequestId": self.request_id, "JobId": job_id}

    def do_GetJob(self, ids, q, body):
        j = self.job(ids[0])
        with self.st.lock:
            out = j.full()
        out["RequestId"] = self.request_id
        return out

    def do_StopJob(self, ids, q, body):
        j = self.job(ids[0])
        stop_job(self.st, j)
        return {"RequestId": self.request_id, "JobId": j.id}

    def do_ListJobs(self, ids, q, body):
        def number(name, default, hi):
            v = q.get(name, str(default))
            if not v.isdigit() or not 1 <= int(v) <= hi:
                raise ApiError(400, "InvalidParameter", "The specified parameter %s is not valid." % name)
            return int(v)
        page, size = number("PageNumber", 1, 1 << 30), number("PageSize", 50, 1000)
        ws = q.get("WorkspaceId")
        if ws and self.st.workspaces and ws not in self.st.workspaces:
            # the double's choice: a workspace the account does not have is refused (as CreateJob does)
            raise ApiError(400, "InvalidParameter", "The specified parameter WorkspaceId is not valid: no workspace %s."
                           % ws[:64])
        order = q.get("Order", "desc").lower()
        if order not in ("asc", "desc") or q.get("SortBy", "GmtCreateTime") != "GmtCreateTime":
            raise ApiError(400, "InvalidParameter", "The specified parameter SortBy or Order is not valid.")
        with self.st.lock:
            jobs = [j for j in self.st.jobs.values()
                    if q.get("DisplayName", "") in j.name
                    and q.get("JobId", j.id) == j.id and q.get("Status", j.status) == j.status
                    and q.get("JobType", j.type) == j.type and q.get("WorkspaceId", j.workspace) == j.workspace]
            jobs.sort(key=lambda j: j.created, reverse=order == "desc")
            items = [j.summary() for j in jobs[(page - 1) * size:page * size]]
        return {"RequestId": self.request_id, "Jobs": items, "TotalCount": len(jobs)}

    def do_GetPodLogs(self, ids, q, body):
        j = self.job(ids[0])
        pod = next((p for p in j.pods if p["PodId"] == ids[1]), None)
        if pod is None:
            raise ApiError(404, "PodNotFound", "The pod %s is not found in job %s." % (ids[1][:64], j.id))
        ml = q.get("MaxLines", "2000")
        if not ml.isdigit() or int(ml) < 1:
            raise ApiError(400, "InvalidParameter", "The specified parameter MaxLines is not valid.")
        lines = []
        if pod["log"] and os.path.exists(pod["log"]):
            with open(pod["log"], "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()[:int(ml)]
        return {"RequestId": self.request_id, "JobId": j.id, "PodId": pod["PodId"], "Logs": lines}

    # -- test controls --
    def control(self, method, path):
        st = self.st
        data = self.body()
        self.request_id = str(uuid.uuid4()).upper()
        if path == "/_test/stats":
            with st.lock:
                s = json.loads(json.dumps(st.stats))
                s["jobs"] = {i: {"DisplayName": j.name, "Status": j.status} for i, j in st.jobs.items()}
            return self.reply(200, s)
        if path == "/_test/fail" and method == "POST":
            set_fault(st, data)
            return self.reply(200, {"ok": True})
        m = re.match(r"^/_test/(job|stop)/(.+)$", path)
        if m:
            with st.lock:
                j = st.jobs.get(m.group(2))
                out = {"body": j.raw, "Status": j.status} if j else None
            if j is None:
                return self.error(ApiError(404, "JobNotFound", "no job " + m.group(2)[:64]))
            if m.group(1) == "stop" and method == "POST":
                stop_job(st, j)
            return self.reply(200, out)
        return self.error(ApiError(404, "NotFound", path[:100]))

    def dispatch(self, method):
        path = self.path.partition("?")[0]
        if path.startswith("/_test/"):
            return self.control(method, path)
        return self.handle_api(method)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common_args(ap, "cwd of the pods")
    ap.add_argument("--access-key", action="append", required=True, help="ID:SECRET accepted (repeatable)")
    ap.add_argument("--data-source", action="append", default=[],
                    help="ID:MOUNT:DIR a data source (a NAS), mounted at MOUNT in the pods, DIR here (repeatable)")
    ap.add_argument("--workspace", action="append", default=[], help="the account's workspaces (default: any)")
    ap.add_argument("--log-dir", help="where the pods' output is kept (default: a new temporary directory)")
    ap.add_argument("--creating-seconds", type=float, default=0.1)
    ap.add_argument("--queuing-seconds", type=float, default=0.1)
    ap.add_argument("--max-running", type=int, default=0, help="jobs running at once; the others stay Queuing")
    ap.add_argument("--stop-grace", type=float, default=5.0, help="seconds from SIGTERM to SIGKILL on StopJob")
    ap.add_argument("--max-skew", type=float, default=900.0, help="x-acs-date tolerance in seconds (15 minutes)")
    ap.add_argument("--fail-rate", type=float, default=0.0, help="share of API requests answered 500/503")
    ap.add_argument("--drop-rate", type=float, default=0.0, help="share of API requests dropped unanswered")
    ap.add_argument("--drop-after-rate", type=float, default=0.0,
                    help="share of API requests handled and then dropped unanswered")
    ap.add_argument("--throttle-rate", type=float, default=0.0, help="share of API requests throttled")
    ap.add_argument("--throttle-status", type=int, default=400, help="HTTP status of Throttling.User")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--pod-banner", default="", help="a line each pod's log starts with ({JobId}, {PodId} replaced)")
    st = State(ap.parse_args())
    serve(Handler, st, lambda: [p["proc"] for j in st.jobs.values() for p in j.pods if p["proc"]],
          "data sources bind-mounted" if st.bind else "mount paths rewritten")


if __name__ == "__main__":
    main()

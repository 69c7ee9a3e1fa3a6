#!/usr/bin/python3
"""A test double of the OpenPAI REST server (rest-server API v2), for trialq's tests.

OpenPAI cannot run on the test machines, so this server speaks the part of its REST API
that NNI's OpenPAI training service uses (spec nni-platforms.md §2.3 and §3) and runs
each job's task-role commands as local processes, with the container storage mount
mapped to the local mount (the PAI storage as mounted on the manager host):

  POST /rest-server/api/v2/jobs                          job protocol v2 YAML -> 202
                                                         (400 bad protocol, 409 duplicate name)
  GET  /rest-server/api/v2/jobs?username=U               [{"name", "username", "state", "completedTime",
                                                          "appExitCode", ...}] (flat: no jobStatus)
  GET  /rest-server/api/v2/jobs/{user}~{name}            {"name", "jobStatus": {"state", ...}} / 404
  PUT  /rest-server/api/v2/jobs/{user}~{name}/executionType   {"value": "STOP"} -> 202

Every route needs "Authorization: Bearer <token>" (401 otherwise); a job belongs to
the token's user. States: WAITING -> RUNNING -> SUCCEEDED | FAILED (by the commands'
exit codes; one failed instance fails the job, as minFailedInstances: 1); STOP ->
STOPPING -> STOPPED.

--sim-run S runs no process (for benchmarks): a job is RUNNING for S seconds and then
SUCCEEDED, having written what the trial would have on the storage: one FINAL metric
(ME-framed, <NNI_SYS_DIR>/.nni/metrics) and its end state (.nni/state, "0 <end ms> 0
<attempt>" as run.sh writes it); NNI_SYS_DIR is read from the first task role's command.

Test controls (no auth; only for the test that started the server):
  GET  /_test/stats                counters: posts, created, conflicts, calls, injected,
                                   fault_served (requests that met the fault set last),
                                   routes {"VERB /path/{user}~{name}/...": requests}
  GET  /_test/job/{name}           the protocol a job was submitted with (parsed and as sent)
  POST /_test/fail  {"status": 503, "count": N | "seconds": S, "delay": D, "retry_after": R}
                   next N answers (or all answers for S seconds) are `status` (with a
                   Retry-After: R header when given, as a 429 may have), or are
                   answered after `delay` seconds (a slow server; status 0 = answer normally)
  POST /_test/stop/{name}          stop a job as an administrator would
  POST /_test/forget/{name}        forget a job and kill its processes (PAI lost it)
"""
import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import threading
import time
import urllib.parse

import yaml

from jobserver import JsonHandler, common_args, kill_groups, serve, set_fault, take_fault

FINAL = ("SUCCEEDED", "FAILED", "STOPPED")


class Job:
    def __init__(self, user, name, protocol):
        self.user = user
        self.name = name
        self.protocol = protocol
        self.state = "WAITING"
        self.submitted = int(time.time() * 1000)
        self.launched = None
        self.completed = None
        self.exit_code = None
        self.procs = []
        self.stop_requested = False


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.jobs = {}  # name -> Job
        self.stats = {"posts": 0, "created": 0, "conflicts": 0, "calls": 0, "injected": 0,
                      "unauthorized": 0, "stops": 0, "gets": 0, "lists": 0, "routes": {}}
        self.fail = None  # {"status", "count", "until", "delay"}
        self.tokens = {}
        for t in args.token:
            tok, _, user = t.partition(":")
            self.tokens[tok] = user or "nni"

        # containers see the storage at --container-mount: a bind mount in a private
        # mount namespace when we may (root), else the path is rewritten in the commands
        self.bind = not args.no_bind and subprocess.call(
            ["unshare", "--mount", "/bin/true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0

    def map_path(self, text):
        return text.replace(self.args.container_mount, self.args.local_mount)


def sim_finish(st, job):
    """--sim-run: the trial's FINAL metric and end state, written where its run.sh would
    (see the docstring); an error text when the command names no NNI_SYS_DIR"""
    roles = job.protocol.get("taskRoles") or {}
    cmds = [str(c) for r in roles.values() for c in (r.get("commands") or [])]
    env = {}
    for c in cmds:
        if c.startswith("export ") and "&&" in c:
            for kv in shlex.split(c[7:c.index("&&")]):
                k, _, v = kv.partition("=")
                env[k] = v
    if "NNI_SYS_DIR" not in env:
        return "no NNI_SYS_DIR in the job's command"
    d = st.map_path(env["NNI_SYS_DIR"])
    attempt = 1
    try:
        with open(os.path.join(d, "run.sh")) as f:
            m = re.search(r'\) 0 (\d+)" > "\$NNI_SYS_DIR/\.nni/state\.tmp"', f.read())
            attempt = int(m.group(1)) if m else 1
        with open(os.path.join(d, "parameter.cfg")) as f:
            pid = json.load(f).get("parameter_id")
    except (OSError, ValueError):
        pid = None
    os.makedirs(os.path.join(d, ".nni"), exist_ok=True)
    rec = json.dumps({"parameter_id": pid, "trial_job_id": env.get("NNI_TRIAL_JOB_ID"), "type": "FINAL",
                      "sequence": 0, "value": "0.25"}, separators=(",", ":")) + "\n"
    with open(os.path.join(d, ".nni", "metrics"), "a") as f:
        f.write("ME%06d%s" % (len(rec.encode()), rec))
    with open(os.path.join(d, ".nni", "state.tmp"), "w") as f:
        f.write("0 %d 0 %d\n" % (int(time.time() * 1000), attempt))
    os.rename(os.path.join(d, ".nni", "state.tmp"), os.path.join(d, ".nni", "state"))
    return None


def sim_job(st, job):
    """--sim-run: RUNNING for that long without a process, then SUCCEEDED (or STOPPED)"""
    with st.lock:
        job.state = "RUNNING"
        job.launched = int(time.time() * 1000)
    end = time.time() + st.args.sim_run
    while time.time() < end and not job.stop_requested:
        time.sleep(min(0.5, max(0.0, end - time.time())))
    why = None if job.stop_requested else sim_finish(st, job)
    with st.lock:
        job.completed = int(time.time() * 1000)
        job.exit_code = 0 if why is None else 1
        if job.stop_requested:
            job.state = "STOPPED"
        else:
            job.state = "SUCCEEDED" if why is None else "FAILED"


def run_job(st, job):
    """Starts every instance of every task role; records the end."""
    time.sleep(st.args.start_delay)
    roles = job.protocol.get("taskRoles") or {}
    with st.lock:
        if job.stop_requested or job.state != "WAITING":
            if job.state == "STOPPING":
                job.state = "STOPPED"
                job.completed = int(time.time() * 1000)
            return
    if st.args.sim_run is not None:
        return sim_job(st, job)
    with st.lock:
        for rname, role in roles.items():
            cmds = role.get("commands") or []
            script = "\n".join(str(c) for c in cmds)
            for idx in range(int(role.get("instances", 1) or 1)):
                env = dict(os.environ)
                env.update({"PAI_JOB_NAME": job.name, "PAI_USER_NAME": job.user,
                            "PAI_CURRENT_TASK_ROLE_NAME": rname, "PAI_TASK_ROLE_NAME": rname,
                            "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX": str(idx),
                            "PAI_TASK_INDEX": str(idx)})
                if st.bind:
                    # a private mount namespace in which the storage is where the
                    # container sees it, as in a PAI container
                    argv = ["unshare", "--mount", "--propagation", "private", "/bin/bash", "-c",
                            'mkdir -p "$1" && mount --bind "$2" "$1" && exec /bin/bash -c "$3"', "pai-job",
                            st.args.container_mount, st.args.local_mount, script]
                else:
                    argv = ["/bin/bash", "-c", st.map_path(script)]
                p = subprocess.Popen(argv, env=env, cwd=st.args.workdir,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
                job.procs.append(p)
        job.state = "RUNNING"
        job.launched = int(time.time() * 1000)
    codes = [p.wait() for p in job.procs]
    with st.lock:
        job.completed = int(time.time() * 1000)
        bad = [c for c in codes if c != 0]
        job.exit_code = bad[0] if bad else 0
        if job.state == "STOPPING" or job.stop_requested:
            job.state = "STOPPED"
        else:
            job.state = "FAILED" if bad else "SUCCEEDED"


def stop_job(st, job):
    """STOP: SIGTERM to each instance's process group, SIGKILL after 5 s."""
    with st.lock:
        if job.state in FINAL or job.state == "STOPPING":
            return
        job.stop_requested = True
        job.state = "STOPPING"
        procs = list(job.procs)
    if not procs:
        return  # not started yet: run_job sees stop_requested and ends it STOPPED
    kill_groups(procs, 5)


def list_entry(j):
    """a job as the user's job list shows it: flat, the job's status fields beside its name"""
    st = j["jobStatus"]
    return {"name": j["name"], "username": j["username"], "state": st["state"], "subState": st["subState"],
            "executionType": st["executionType"], "retries": st["retries"], "createdTime": st["createdTime"],
            "launchedTime": st["appLaunchedTime"], "completedTime": st["completedTime"],
            "appExitCode": st["appExitCode"], "virtualCluster": st["virtualCluster"],
            "submissionTime": j["submissionTime"]}


def job_json(job):
    return {
        "name": job.name, "username": job.user, "state": job.state,
        "submissionTime": job.submitted, "executionType": "STOP" if job.stop_requested else "START",
        "jobStatus": {
            "username": job.user, "state": job.state, "subState": job.state,
            "executionType": "STOP" if job.stop_requested else "START",
            "createdTime": job.submitted, "appLaunchedTime": job.launched,
            "completedTime": job.completed, "appExitCode": job.exit_code, "retries": 0,
            "appTrackingUrl": "", "virtualCluster": (job.protocol.get("defaults") or {}).get("virtualCluster",
                                                                                              "default"),
        },
        "taskRoles": {r: {"taskRoleStatus": {"name": r}} for r in (job.protocol.get("taskRoles") or {})},
    }


def check_protocol(p):
    if not isinstance(p, dict):
        return "the job protocol must be a mapping"
    if str(p.get("protocolVersion")) != "2":
        return "protocolVersion must be 2"
    name = p.get("name")
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "_-" for c in name):
        return "name must match ^[a-zA-Z0-9_-]+$"
    if p.get("type", "job") != "job":
        return "type must be job"
    roles = p.get("taskRoles")
    if not isinstance(roles, dict) or not roles:
        return "taskRoles must be a non-empty mapping"
    images = {x.get("name") for x in (p.get("prerequisites") or []) if isinstance(x, dict)
              and x.get("type") == "dockerimage"}
    for rname, role in roles.items():
        if not isinstance(role, dict):
            return "taskRoles.%s must be a mapping" % rname
        cmds = role.get("commands")
        if not isinstance(cmds, list) or not cmds or not all(isinstance(c, str) for c in cmds):
            return "taskRoles.%s.commands must be a non-empty list of strings" % rname
        if images and role.get("dockerImage") not in images:
            return "taskRoles.%s.dockerImage must name a dockerimage prerequisite" % rname
        res = role.get("resourcePerInstance") or {}
        for k in ("cpu", "memoryMB", "gpu"):
            if k in res and not isinstance(res[k], int):
                return "taskRoles.%s.resourcePerInstance.%s must be an integer" % (rname, k)
    return None


class Handler(JsonHandler):
    name = "pai_server"

    def reply(self, code, obj=None):
        self.send_json(code, obj)

    def error(self, code, name, msg):
        self.reply(code, {"code": name, "message": msg})

    def user(self):
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("Bearer "):
            return None
        return self.st.tokens.get(auth[7:].strip())

    def injected(self):
        """Failure injection: True when this request was answered (or dropped) here."""
        st = self.st
        with st.lock:
            f = take_fault(st)
            if not f:
                return False
            status, delay, retry = f.get("status", 0), f.get("delay", 0), f.get("retry_after")
        if delay:
            time.sleep(delay)
        if status:
            self.send_json(status, {"code": "InjectedError", "message": "injected failure (HTTP %d)" % status},
                           headers=(("Retry-After", str(retry)),) if retry is not None else ())
            return True
        return False

    def route(self, method):
        st = self.st
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        q = urllib.parse.parse_qs(url.query)
        if path.startswith("/_test/"):
            return self.control(method, path)
        data = self.body()
        pattern = re.sub(r"/jobs/[^/]+~[^/]+", "/jobs/{user}~{name}", path)
        with st.lock:
            st.stats["calls"] += 1
            route = "%s %s" % (method, pattern)
            st.stats["routes"][route] = st.stats["routes"].get(route, 0) + 1
        if self.injected():
            return
        if not path.startswith("/rest-server/api/v2/jobs"):
            return self.error(404, "NotFoundError", "no route %s %s" % (method, path))
        user = self.user()
        if user is None:
            with st.lock:
                st.stats["unauthorized"] += 1
            return self.error(401, "UnauthorizedUserError", "Guest is not allowed to do this operation.")
        rest = path[len("/rest-server/api/v2/jobs"):]
        if rest in ("", "/") and method == "POST":
            return self.submit(user, data)
        if rest in ("", "/") and method == "GET":
            with st.lock:
                st.stats["lists"] += 1
                want = (q.get("username") or [None])[0]
                items = [job_json(j) for j in st.jobs.values() if want is None or j.user == want]
            return self.reply(200, [list_entry(i) for i in items])
        parts = rest.strip("/").split("/")
        key = parts[0]
        if "~" not in key:
            return self.error(404, "NoJobError", "job key must be user~name")
        kuser, name = key.split("~", 1)
        with st.lock:
            job = st.jobs.get(name)
            if job is not None and job.user != kuser:
                job = None
        if job is None:
            return self.error(404, "NoJobError", "Job %s~%s is not found." % (kuser, name))
        if len(parts) == 1 and method == "GET":
            with st.lock:
                st.stats["gets"] += 1
                j = job_json(job)
            return self.reply(200, j)
        if len(parts) == 2 and parts[1] == "executionType" and method == "PUT":
            if job.user != user:
                return self.error(403, "ForbiddenUserError", "User %s is not allowed to stop %s." % (user, key))
            try:
                value = json.loads(data or b"{}").get("value")
            except (ValueError, AttributeError):
                value = None
            if value != "STOP":
                return self.error(400, "InvalidParametersError", "value must be STOP")
            with st.lock:
                st.stats["stops"] += 1
            stop_job(st, job)
            return self.reply(202, {"message": "Update job %s executionType to STOP successfully." % name})
        return self.error(405, "MethodNotAllowed", "%s %s" % (method, path))

    def submit(self, user, data):
        st = self.st
        with st.lock:
            st.stats["posts"] += 1
        ctype = self.headers.get("Content-Type", "")
        if "yaml" not in ctype:
            return self.error(415, "UnsupportedMediaType", "expected text/yaml, got %r" % ctype)
        try:
            proto = yaml.safe_load(data.decode("utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            return self.error(400, "InvalidProtocolError", "bad YAML: %s" % exc)
        err = check_protocol(proto)
        if err:
            return self.error(400, "InvalidProtocolError", err)
        name = proto["name"]
        with st.lock:
            if name in st.jobs:
                st.stats["conflicts"] += 1
                return self.error(409, "ConflictJobError", "Job name %s already exists." % name)
            job = Job(user, name, proto)
            job.yaml = data.decode("utf-8")
            st.jobs[name] = job
            st.stats["created"] += 1
            st.stats.setdefault("created_names", []).append(name)
        threading.Thread(target=run_job, args=(st, job), daemon=True).start()
        return self.reply(202, {"message": "update job %s successfully" % name})

    def control(self, method, path):
        st = self.st
        data = self.body()
        if path == "/_test/stats":
            with st.lock:
                s = dict(st.stats)
                s["routes"] = dict(st.stats["routes"])
                s["jobs"] = {n: j.state for n, j in st.jobs.items()}
            return self.reply(200, s)
        if path == "/_test/fail" and method == "POST":
            set_fault(st, data)
            return self.reply(200, {"ok": True})
        if path.startswith("/_test/job/"):
            with st.lock:
                job = st.jobs.get(path[len("/_test/job/"):])
                if job:
                    return self.reply(200, {"protocol": job.protocol, "yaml": job.yaml, "state": job.state})
            return self.error(404, "NoJobError", path)
        for prefix, fn in (("/_test/stop/", "stop"), ("/_test/forget/", "forget")):
            if path.startswith(prefix) and method == "POST":
                name = path[len(prefix):]
                with st.lock:
                    job = st.jobs.get(name)
                    if job and fn == "forget":
                        del st.jobs[name]
                        job.stop_requested = True
                if not job:
                    return self.error(404, "NoJobError", name)
                if fn == "forget":  # its containers are gone with it
                    for p in job.procs:
                        try:
                            os.killpg(p.pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                if fn == "stop":
                    stop_job(st, job)
                return self.reply(200, {"ok": True})
        return self.error(404, "NotFound", path)

    def dispatch(self, method):
        self.route(method)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common_args(ap, "cwd of the job processes")
    ap.add_argument("--token", action="append", required=True, help="TOKEN[:USER] accepted (repeatable)")
    ap.add_argument("--local-mount", required=True, help="the PAI storage as mounted on this host")
    ap.add_argument("--container-mount", required=True, help="the same storage as the containers see it")
    ap.add_argument("--start-delay", type=float, default=0.05, help="seconds a job stays WAITING")
    ap.add_argument("--sim-run", type=float, help="SECONDS: jobs run no process and succeed after this long")
    st = State(ap.parse_args())
    serve(Handler, st, lambda: [p for j in st.jobs.values() for p in j.procs],
          "storage bind-mounted" if st.bind else "container paths rewritten")


if __name__ == "__main__":
    main()

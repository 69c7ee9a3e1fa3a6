#!/usr/bin/python3
"""A strict test double of Azure Machine Learning's v2 jobs REST API and of the Microsoft
identity platform's client-credentials token endpoint, for trialq's tests.

Azure cannot run on the test machines, so this server plays both hosts a client talks to
(its authorityHost and its managementEndpoint) and runs each command job as a local
process, with the workspace's datastores mapped to local directories:

  POST {tenant}/oauth2/v2.0/token        grant_type=client_credentials, client_id,
                                         client_secret, scope=<resource>/.default (form)
       -> {"token_type": "Bearer", "expires_in", "ext_expires_in", "access_token": <JWT>}
  PUT  /subscriptions/{s}/resourceGroups/{rg}/providers/Microsoft.MachineLearningServices/
       workspaces/{ws}/jobs/{name}?api-version=2023-04-01    a command job -> 201 (200: the
                                         same job again; 400 UserError: another job of that name)
  GET  .../jobs/{name}?api-version=...   the job, properties.status
  GET  .../jobs?api-version=...[&tag=KEY][&$skip=TOKEN]   {"value": [jobs], "nextLink"}: the
                                         workspace's jobs, oldest first, those with the tag key KEY
                                         only when tag is given (Jobs - List documents "jobs returned
                                         will have this tag key"); --page-size jobs a page, the next
                                         page at nextLink (absent on the last): the same URL with
                                         $skip, an opaque continuation token (400 UserError when it
                                         is not one of ours)
  GET  .../computes/{name}, .../datastores/{name}   a compute target, a datastore (404
                                         UserError when the workspace has none of that name)
  PUT  .../environments/{name}/versions/{version}  {"properties": {"image"}}: an environment
                                         (201; 200 the same again; 400 UserError: another image)
  POST .../jobs/{name}/cancel?api-version=...   202 Accepted, Location: an operation that
                                         answers 202 until the job is Canceled, then 200 (its GET
                                         needs the bearer token too)

Tokens are JWT-shaped (header.payload.signature, base64url) with aud (the scope's
resource), iss, tid (the tenant), appid, iat, nbf, exp (--token-lifetime seconds). Every
management request needs "Authorization: Bearer <token>" that this server issued (signed
with its own key), for the management audience (https://management.azure.com or
https://management.core.windows.net, with or without the final slash), not expired, of the
subscription's tenant: else 401 with WWW-Authenticate and ARM's codes
AuthenticationFailed (no header), InvalidAuthenticationToken (not a token of ours),
InvalidAuthenticationTokenAudience, ExpiredAuthenticationToken,
InvalidAuthenticationTokenTenant. Then: 400 MissingApiVersionParameter,
400 NoRegisteredProviderFound (an api-version not in --api-version), 404
SubscriptionNotFound, ResourceGroupNotFound, ResourceNotFound (the workspace), and the
workspace's own 403 AuthorizationFailed (a --no-role principal), 400/404 UserError (a bad job body, an unknown compute or datastore,
"Job X not found"). A service principal may instead sign a client assertion (--client-cert ID:PEM, the
certificate registered on the application): client_assertion_type
urn:ietf:params:oauth:client-assertion-type:jwt-bearer and client_assertion, a JWT whose
header has alg RS256 and x5t (base64url SHA-1 thumbprint of the certificate), whose
claims have aud (this token endpoint's URL), iss = sub = the client id, exp, nbf and jti,
and whose signature verifies with the certificate's public key (checked with the openssl
command). The token endpoint refuses as the identity platform does: 400
invalid_request (AADSTS90002, no such tenant), 400 unauthorized_client (AADSTS700016,
no such application), 401 invalid_client (AADSTS7000215, a wrong secret), 400
invalid_scope (AADSTS1002012, a scope without /.default), 400 invalid_resource
(AADSTS500011), 400 unsupported_grant_type (AADSTS70003), 401 invalid_client
(AADSTS700027: an assertion whose certificate is not registered, whose signature does
not verify or whose jti was used before; AADSTS700024: not within its valid time range).

Jobs walk NotStarted -> Starting -> Provisioning -> Preparing -> Queued -> Running ->
Finalizing -> Completed | Failed (by the command's exit code; --state-seconds each);
cancel: CancelRequested -> Canceled. A job's command runs with bash, its
environmentVariables and AZUREML_RUN_ID set; ${{inputs.X}} and ${{outputs.X}} become
the local directory of their azureml://datastores/<datastore>/paths/<path> (or a
literal input's value).

Where Azure documents no behaviour the double chooses, and says so: cancelling a job
that has ended changes nothing (202, its operation done at once).

Test controls (no token; only for the test that started the server):
  GET  /_test/stats                 counters (fault_served: requests that met the fault
                                    /_test/fail set last), the jobs' states
  GET  /_test/job/{name}            the PUT body as received, the job's states so far, its output
  POST /_test/job/{name} {"command"}  the job's stored command replaced (as another client made it)
  POST /_test/token {"aud", "tid", "exp_in", "appid"}   a token as this server would sign it
  POST /_test/fail (a "delay" mode handles the request as it comes, token check included,
                    and answers "delay" seconds late; any other mode with "delay" waits first)
                   {"mode": "status"|"throttle"|"drop"|"drop_after"|"delay", "status",
                    "count" | "seconds", "delay", "action": "token"|"put"|"get"|"list"|"cancel"|"environment"}
"""
import argparse
import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
import uuid

from jobserver import JsonHandler, common_args, kill_groups, serve, set_fault, take_fault

MGMT_AUDIENCES = ("https://management.azure.com", "https://management.azure.com/",
                  "https://management.core.windows.net", "https://management.core.windows.net/")
RESOURCES = ("https://management.azure.com", "https://management.core.windows.net", "https://ml.azure.com",
             "https://storage.azure.com")
STATES = ("NotStarted", "Starting", "Provisioning", "Preparing", "Queued")
FINAL = ("Completed", "Failed", "Canceled")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,254}$")
URI_RE = re.compile(r"^azureml://datastores/([^/]+)/paths/(.*)$")
PLACEHOLDER_RE = re.compile(r"\$\{\{\s*(inputs|outputs)\.([A-Za-z0-9_]+)\s*\}\}")


class ApiError(Exception):
    def __init__(self, status, body, headers=()):
        super().__init__(str(body))
        self.status, self.body, self.headers = status, body, list(headers)


def arm_error(status, code, message, headers=()):
    return ApiError(status, {"error": {"code": code, "message": message}}, headers)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def utc_iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%06dZ" % int((t % 1) * 1e6)


def arm_time(t):
    """the time as ARM writes it in ExpiredAuthenticationToken: 11/27/2026 6:00:00 AM"""
    tm = time.gmtime(t)
    return "%d/%d/%d %d:%02d:%02d %s" % (tm.tm_mon, tm.tm_mday, tm.tm_year, (tm.tm_hour % 12) or 12, tm.tm_min,
                                         tm.tm_sec, "AM" if tm.tm_hour < 12 else "PM")


class Job:
    def __init__(self, name, body, path, local_paths):
        self.name, self.body, self.path, self.local = name, body, path, local_paths
        self.status = "NotStarted"
        self.history = ["NotStarted"]
        self.created = time.time()
        self.started = self.ended = None
        self.proc = None
        self.output = None
        self.cancel = False

    def set(self, status):
        self.status = status
        self.history.append(status)

    def resource(self, st):
        p = dict(self.body["properties"])
        ws_id = self.path.rsplit("/jobs/", 1)[0]
        p["status"] = self.status
        p["services"] = {"Studio": {"jobServiceType": "Studio", "endpoint": "https://ml.azure.com/runs/%s?wsid=%s&tid=%s"
                                    % (self.name, ws_id, st.tenant_of(self.path))},
                         "Tracking": {"jobServiceType": "Tracking", "endpoint": "azureml://tracking"}}
        p.setdefault("experimentName", "Default")
        p.setdefault("displayName", self.name)
        times = {"startTimeUtc": utc_iso(self.started)} if self.started else {}
        if self.ended:
            times["endTimeUtc"] = utc_iso(self.ended)
        if times:
            p["properties"] = dict(p.get("properties") or {}, **times)
        return {"id": self.path, "name": self.name, "type": "Microsoft.MachineLearningServices/workspaces/jobs",
                "properties": p, "systemData": {"createdAt": utc_iso(self.created), "createdByType": "Application",
                                                "createdBy": "trialq-test"}}


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.key = secrets.token_bytes(32)  # signs our tokens
        self.tenants = set(args.tenant)
        self.clients = {}
        for c in args.client:
            cid, sep, secret = c.partition(":")
            if not sep or not cid or not secret:
                raise SystemExit("aml_server: --client wants ID:SECRET")
            self.clients[cid] = secret
        self.subs = {}  # subscription -> tenant
        for s in args.subscription:
            sub, sep, tenant = s.partition(":")
            if not sep or tenant not in self.tenants:
                raise SystemExit("aml_server: --subscription wants SUB:TENANT of a --tenant")
            self.subs[sub.lower()] = tenant
        self.workspaces = {}  # (sub, rg, ws) lower -> True
        for w in args.workspace:
            parts = w.split("/")
            if len(parts) != 3 or parts[0].lower() not in self.subs:
                raise SystemExit("aml_server: --workspace wants SUB/RESOURCEGROUP/NAME of a --subscription")
            self.workspaces[tuple(x.lower() for x in parts)] = True
        self.certs = {}  # client id -> (x5t, public key PEM path)
        for c in args.client_cert:
            cid, sep, pem = c.partition(":")
            if not sep or not os.path.isfile(pem):
                raise SystemExit("aml_server: --client-cert wants ID:PEM_FILE")
            text = open(pem).read()
            m = re.search(r"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", text, re.S)
            if not m:
                raise SystemExit("aml_server: %s holds no certificate" % pem)
            der = base64.b64decode("".join(m.group(1).split()))
            pub = os.path.join(tempfile.mkdtemp(prefix="aml-cert-"), "pub.pem")
            subprocess.run(["openssl", "x509", "-pubkey", "-noout", "-in", pem, "-out", pub], check=True)
            self.certs[cid] = (b64url(hashlib.sha1(der).digest()), pub)
        self.jtis = set()
        self.environments = {}  # ARM id lower -> image
        self.computes = {c.lower() for c in args.compute}
        self.datastores = {}
        for d in args.datastore:
            name, sep, local = d.partition(":")
            if not sep or not os.path.isdir(local):
                raise SystemExit("aml_server: --datastore wants NAME:EXISTING_DIR")
            self.datastores[name] = os.path.abspath(local)
        self.jobs = {}  # ARM id lower -> Job
        self.ops = {}  # operation id -> Job
        self.fail = None
        self.stats = {"calls": 0, "injected": 0, "fault_served": 0, "created": 0, "tokens": 0, "refused": {}}
        self.log_dir = args.log_dir or tempfile.mkdtemp(prefix="aml-server-logs-")

    def cert_of(self, cid):
        return self.certs.get(cid)

    def tenant_of(self, path):
        return self.subs.get(path.split("/")[2].lower(), "")

    def token(self, aud, tid, appid, exp_in):
        now = int(time.time())
        head = b64url(json.dumps({"typ": "JWT", "alg": "HS256", "kid": "aml-server"}).encode())
        body = b64url(json.dumps({"aud": aud, "iss": "https://sts.windows.net/%s/" % tid, "tid": tid, "appid": appid,
                                  "oid": str(uuid.uuid5(uuid.NAMESPACE_URL, appid)), "iat": now, "nbf": now,
                                  "exp": now + int(exp_in)}).encode())
        sig = b64url(hmac.new(self.key, (head + "." + body).encode(), hashlib.sha256).digest())
        return head + "." + body + "." + sig


def run_job(st, job):
    a = st.args
    for s in STATES[1:]:
        time.sleep(a.state_seconds)
        with st.lock:
            if job.cancel:
                job.set("Canceled")
                job.ended = time.time()
                return
            job.set(s)
    time.sleep(a.state_seconds)
    p = job.body["properties"]
    cmd = PLACEHOLDER_RE.sub(lambda m: job.local[(m.group(1), m.group(2))], p["command"])
    env = dict(os.environ, **{str(k): str(v) for k, v in (p.get("environmentVariables") or {}).items()})
    env["AZUREML_RUN_ID"] = job.name
    for (kind, name), path in job.local.items():
        if kind == "outputs" and (p["outputs"][name]["jobOutputType"] == "uri_folder"):
            os.makedirs(path, exist_ok=True)
    with st.lock:
        if job.cancel:
            job.set("Canceled")
            job.ended = time.time()
            return
        job.output = os.path.join(st.log_dir, job.name + ".log")
        with open(job.output, "wb") as out:
            job.proc = subprocess.Popen(["/bin/bash", "-c", cmd], env=env, cwd=a.workdir, stdin=subprocess.DEVNULL,
                                        stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        job.started = time.time()
        job.set("Running")
    code = job.proc.wait()
    with st.lock:
        if job.cancel:
            job.set("Canceled")
        else:
            job.set("Finalizing")
    if not job.cancel:
        time.sleep(a.state_seconds)
    with st.lock:
        job.ended = time.time()
        if job.status != "Canceled":
            job.set("Completed" if code == 0 else "Failed")


def check_job(st, body):
    """the local path of each input and output of a valid command job"""
    def user(msg):
        return arm_error(400, "UserError", msg)
    if not isinstance(body, dict) or not isinstance(body.get("properties"), dict):
        raise user("The request body must be a JSON object with 'properties'.")
    p = body["properties"]
    if p.get("jobType") != "Command":
        raise user("Only command jobs are supported here: properties.jobType must be 'Command'.")
    for k in ("command", "environmentId", "computeId"):
        if not isinstance(p.get(k), str) or not p[k].strip():
            raise user("properties.%s is required for a command job." % k)
    env_id = p["environmentId"]
    if "/environments/" in env_id.lower() and env_id.lower() not in st.environments:
        raise user("Environment '%s' not found: register it (PUT .../environments/<name>/versions/<version>) "
                   "first." % env_id[:200])
    compute = p["computeId"].rstrip("/").rsplit("/", 1)[-1]
    if "/computes/" not in p["computeId"].lower() or compute.lower() not in st.computes:
        raise user("Compute '%s' not found in the workspace: computeId must be the ARM id of one of its computes."
                   % compute[:100])
    local = {}
    for kind, key in (("inputs", "jobInputType"), ("outputs", "jobOutputType")):
        items = p.get(kind) or {}
        if not isinstance(items, dict):
            raise user("properties.%s must be an object." % kind)
        for name, item in items.items():
            if not isinstance(item, dict) or not isinstance(item.get(key), str):
                raise user("properties.%s.%s needs %s." % (kind, name, key))
            if kind == "inputs" and item[key] == "literal":
                local[(kind, name)] = str(item.get("value", ""))
                continue
            if item[key] not in ("uri_folder", "uri_file"):
                raise user("properties.%s.%s: %s '%s' is not supported here." % (kind, name, key, item[key]))
            m = URI_RE.match(str(item.get("uri", "")))
            if not m:
                raise user("properties.%s.%s.uri must be azureml://datastores/<datastore>/paths/<path>." % (kind, name))
            if m.group(1) not in st.datastores:
                raise user("Datastore '%s' not found in the workspace." % m.group(1))
            rel = os.path.normpath("/" + urllib.parse.unquote(m.group(2))).lstrip("/")
            local[(kind, name)] = os.path.join(st.datastores[m.group(1)], rel)
    for m in PLACEHOLDER_RE.finditer(p["command"]):
        if (m.group(1), m.group(2)) not in local:
            raise user("The command uses ${{%s.%s}}, which the job does not define." % (m.group(1), m.group(2)))
    env = p.get("environmentVariables")
    if env is not None and (not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values())):
        raise user("properties.environmentVariables must map names to strings.")
    return local


class Handler(JsonHandler):
    name = "aml_server"

    def reply(self, code, obj, headers=()):
        if getattr(self, "delay_answer", 0):
            time.sleep(self.delay_answer)
            self.delay_answer = 0
        if getattr(self, "drop_answer", False):
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self.send_json(code, obj, "application/json; charset=utf-8",
                       [("x-ms-request-id", str(uuid.uuid4()))] + list(headers))

    def refuse(self, err):
        code = err.body.get("error")
        code = code.get("code") if isinstance(code, dict) else code
        with self.st.lock:
            r = self.st.stats["refused"]
            r[code] = r.get(code, 0) + 1
        self.reply(err.status, err.body, err.headers)

    def injected(self, action):
        st = self.st
        with st.lock:
            f = take_fault(st, action)
        if not f:
            return False
        mode = f.get("mode", "status")
        if f.get("delay") and mode == "delay":
            # the request is handled as it arrives (its token checked then), the answer is late
            self.delay_answer = f["delay"]
            return False
        if f.get("delay"):
            time.sleep(f["delay"])
        if mode == "drop":
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return True
        if mode == "drop_after":
            self.drop_answer = True
        elif mode == "throttle":
            self.refuse(arm_error(f.get("status", 429), "TooManyRequests", "The request is being throttled.",
                                  [("Retry-After", "1")]))
            return True
        elif mode == "status":
            s = f.get("status", 503)
            self.refuse(arm_error(s, "ServiceUnavailable" if s == 503 else "InternalServerError",
                                  "The service is temporarily unavailable." if s == 503 else
                                  "The server encountered an internal error."))
            return True
        return False

    # -- the identity platform --
    def token_endpoint(self, tenant, data):
        st = self.st

        def aad(status, error, code, desc):
            return ApiError(status, {"error": error, "error_description": "AADSTS%d: %s" % (code, desc),
                                     "error_codes": [code], "timestamp": utc_iso(time.time()),
                                     "trace_id": str(uuid.uuid4()), "correlation_id": str(uuid.uuid4()),
                                     "error_uri": "%s/error?code=%d" % (self.headers.get("Host", ""), code)})
        if "application/x-www-form-urlencoded" not in self.headers.get("Content-Type", ""):
            raise aad(400, "invalid_request", 900144, "The request body must contain the following parameter: "
                      "'grant_type'.")
        form = dict(urllib.parse.parse_qsl(data.decode("utf-8", "replace"), keep_blank_values=True))
        if tenant not in st.tenants:
            raise aad(400, "invalid_request", 90002, "Tenant '%s' not found." % tenant[:80])
        if form.get("grant_type") != "client_credentials":
            raise aad(400, "unsupported_grant_type", 70003, "The app requested an unsupported grant type '%s'."
                      % form.get("grant_type", "")[:40])
        cid = form.get("client_id", "")
        if cid not in st.clients and cid not in st.certs:
            raise aad(400, "unauthorized_client", 700016, "Application with identifier '%s' was not found in the "
                      "directory '%s'." % (cid[:80], tenant))
        if "client_assertion" in form:
            self.check_assertion(aad, tenant, cid, form)
        elif cid not in st.clients or not hmac.compare_digest(form.get("client_secret", "").encode(),
                                                              st.clients[cid].encode()):
            raise aad(401, "invalid_client", 7000215, "Invalid client secret provided. Ensure the secret being sent "
                      "in the request is the client secret value, not the client secret ID, for a secret added to "
                      "app '%s'." % cid)
        scope = form.get("scope", "")
        if not scope.endswith("/.default"):
            raise aad(400, "invalid_scope", 1002012, "The provided value for scope %s is not valid. Client "
                      "credential flows must have a scope value with /.default suffixed to the resource identifier "
                      "(application ID URI)." % scope[:100])
        resource = scope[:-len("/.default")]
        if resource.rstrip("/") not in RESOURCES:
            raise aad(400, "invalid_resource", 500011, "The resource principal named %s was not found in the "
                      "tenant named %s." % (resource[:100], tenant))
        life = st.args.token_lifetime
        with st.lock:
            st.stats["tokens"] += 1
        return {"token_type": "Bearer", "expires_in": life, "ext_expires_in": life,
                "access_token": st.token(resource, tenant, cid, life)}

    def check_assertion(self, aad, tenant, cid, form):
        st = self.st

        def bad(code, desc):
            return aad(401, "invalid_client", code, desc)
        if form.get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
            raise aad(400, "invalid_request", 50027, "Invalid client_assertion_type '%s'."
                      % form.get("client_assertion_type", "")[:80])
        parts = form["client_assertion"].split(".")
        try:
            head, claims = json.loads(unb64url(parts[0])), json.loads(unb64url(parts[1]))
            sig = unb64url(parts[2])
        except (ValueError, IndexError):
            raise aad(400, "invalid_request", 50027, "JWT token is invalid or malformed.")
        cert = st.cert_of(cid)
        if not isinstance(head, dict) or not isinstance(claims, dict) or head.get("alg") != "RS256":
            raise aad(400, "invalid_request", 50027, "JWT token is invalid or malformed (alg must be RS256).")
        if cert is None or head.get("x5t") != cert[0]:
            raise bad(700027, "The certificate with identifier used to sign the client assertion is not registered "
                      "on application. [Reason - The key was not found., Thumbprint of key used by client: '%s']"
                      % str(head.get("x5t"))[:60])
        with tempfile.TemporaryDirectory(prefix="aml-jwt-") as d:
            open(os.path.join(d, "data"), "wb").write((parts[0] + "." + parts[1]).encode())
            open(os.path.join(d, "sig"), "wb").write(sig)
            ok = subprocess.run(["openssl", "dgst", "-sha256", "-verify", cert[1], "-signature",
                                 os.path.join(d, "sig"), os.path.join(d, "data")], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL).returncode == 0
        if not ok:
            raise bad(700027, "Client assertion failed signature validation.")
        want_aud = "http://%s/%s/oauth2/v2.0/token" % (self.headers.get("Host", ""), tenant)
        if claims.get("aud") != want_aud:
            raise bad(700027, "The audience claim value '%s' is invalid; it must be '%s'." % (
                str(claims.get("aud"))[:200], want_aud))
        if claims.get("iss") != cid or claims.get("sub") != cid:
            raise bad(700027, "The issuer and subject of the client assertion must be the client id '%s'." % cid)
        now = time.time()
        if not isinstance(claims.get("exp"), int) or claims["exp"] <= now or claims.get("nbf", 0) > now + 300:
            raise bad(700024, "Client assertion is not within its valid time range. Current time: %s, assertion "
                      "valid from %s, expiry time of assertion %s." % (utc_iso(now), claims.get("nbf"),
                                                                       claims.get("exp")))
        with st.lock:
            if not claims.get("jti") or claims["jti"] in st.jtis:
                raise bad(700027, "The client assertion's jti is missing or was used before.")
            st.jtis.add(claims["jti"])

    # -- ARM --
    def authenticate(self, path):
        st = self.st
        tenant = st.tenant_of(path) or next(iter(st.tenants), "")

        def no(code, message):
            return arm_error(401, code, message, [(
                "WWW-Authenticate", 'Bearer authorization_uri="https://login.microsoftonline.com/%s", '
                'error="invalid_token", error_description="%s"' % (tenant, message.replace('"', "'")))])
        auth = self.headers.get("Authorization")
        if not auth:
            raise no("AuthenticationFailed", "Authentication failed. The 'Authorization' header is missing.")
        scheme, _, tok = auth.partition(" ")
        parts = tok.strip().split(".")
        if scheme.lower() != "bearer" or len(parts) != 3:
            raise no("InvalidAuthenticationToken", "The access token is invalid.")
        want = b64url(hmac.new(st.key, (parts[0] + "." + parts[1]).encode(), hashlib.sha256).digest())
        try:
            claims = json.loads(unb64url(parts[1]))
        except ValueError:
            claims = None
        if not hmac.compare_digest(want, parts[2]) or not isinstance(claims, dict):
            raise no("InvalidAuthenticationToken", "The access token is invalid.")
        if claims.get("aud") not in MGMT_AUDIENCES:
            raise no("InvalidAuthenticationTokenAudience", "The access token has been obtained for wrong audience or "
                     "resource '%s'. It should exactly match with one of the allowed audiences '%s'."
                     % (claims.get("aud"), "','".join(MGMT_AUDIENCES)))
        now = time.time()
        if claims.get("exp", 0) <= now:
            raise no("ExpiredAuthenticationToken", "The access token expiry UTC time '%s' is earlier than current UTC "
                     "time '%s'." % (arm_time(claims.get("exp", 0)), arm_time(now)))
        if st.tenant_of(path) and claims.get("tid") != st.tenant_of(path):
            raise no("InvalidAuthenticationTokenTenant", "The access token is from the wrong issuer '%s'. It must "
                     "match the tenant 'https://sts.windows.net/%s/' associated with this subscription."
                     % (claims.get("iss"), st.tenant_of(path)))
        return claims

    def arm(self, method, raw_path, query, data):
        st = self.st
        segs = raw_path.rstrip("/").split("/")
        low = [s.lower() for s in segs]
        # /subscriptions/S/resourceGroups/RG/providers/Microsoft.MachineLearningServices/workspaces/WS/jobs[/N[/cancel]]
        if (len(segs) < 10 or low[1] != "subscriptions" or low[3] != "resourcegroups" or low[5] != "providers"
                or low[6] != "microsoft.machinelearningservices" or low[7] != "workspaces"
                or low[9] not in ("jobs", "computes", "datastores", "environments")):
            raise arm_error(404, "InvalidResourceType", "The resource type could not be found in the namespace.")
        if low[9] == "jobs":
            action = {(10, "GET"): "list", (11, "PUT"): "put", (11, "GET"): "get", (12, "POST"): "cancel"}.get(
                (len(segs), method))
        elif low[9] == "environments":
            action = "environment" if (len(segs), method) == (13, "PUT") and low[11] == "versions" else None
        else:
            action = low[9][:-1] if (len(segs), method) == (11, "GET") else None
        if action is None or (action == "cancel" and low[11] != "cancel"):
            raise arm_error(405, "MethodNotAllowed", "The requested resource does not support http method '%s'."
                            % method)
        claims = self.authenticate(raw_path)
        ver = query.get("api-version")
        if not ver:
            raise arm_error(400, "MissingApiVersionParameter", "The api-version query parameter (?api-version=) is "
                            "required for all requests.")
        if ver not in st.args.api_version:
            raise arm_error(400, "NoRegisteredProviderFound", "No registered resource provider found for API version "
                            "'%s' and type 'workspaces/jobs'. The supported api-versions are '%s'."
                            % (ver[:40], ", ".join(st.args.api_version)))
        sub, rg, ws = low[2], low[4], low[8]
        if sub not in st.subs:
            raise arm_error(404, "SubscriptionNotFound", "The subscription '%s' could not be found." % segs[2])
        if not any(k[:2] == (sub, rg) for k in st.workspaces):
            raise arm_error(404, "ResourceGroupNotFound", "Resource group '%s' could not be found." % segs[4])
        if (sub, rg, ws) not in st.workspaces:
            raise arm_error(404, "ResourceNotFound", "The Resource 'Microsoft.MachineLearningServices/workspaces/%s' "
                            "under resource group '%s' was not found." % (segs[8], segs[4]))
        if claims.get("appid") in st.args.no_role:
            perm = {"list": "jobs/read", "get": "jobs/read", "put": "jobs/write", "cancel": "jobs/cancel/action",
                    "compute": "computes/read", "datastore": "datastores/read",
                    "environment": "environments/versions/write"}[action]
            raise arm_error(403, "AuthorizationFailed", "The client '%s' with object id '%s' does not have "
                            "authorization to perform action 'Microsoft.MachineLearningServices/workspaces/%s' over "
                            "scope '%s' or the scope is invalid. If access was recently granted, please refresh your "
                            "credentials." % (claims.get("appid"), claims.get("oid"), perm, "/".join(segs[:9])))
        with st.lock:
            st.stats[action] = st.stats.get(action, 0) + 1
        if action == "list":
            return self.list_jobs(raw_path, query, ver, low)
        name = urllib.parse.unquote(segs[10])
        if action in ("compute", "datastore"):
            known = name.lower() in st.computes if action == "compute" else name in st.datastores
            if not known:
                raise arm_error(404, "UserError", "%s %s not found in workspace %s." % (
                    "Compute" if action == "compute" else "Datastore", name[:100], segs[8]))
            props = ({"computeType": "AmlCompute", "provisioningState": "Succeeded"} if action == "compute" else
                     {"datastoreType": "AzureBlob", "containerName": "azureml-blobstore", "isDefault":
                      name == "workspaceblobstore"})
            return 200, {"id": raw_path, "name": name, "properties": props}, []
        if action == "environment":
            return self.put_environment(raw_path, data)
        job_path = "/".join(segs[:10] + [name])
        with st.lock:
            job = st.jobs.get(job_path.lower())
        if action == "put":
            return self.put(job_path, name, job, data)
        if job is None:
            raise arm_error(404, "UserError", "Job %s not found." % name[:100])
        if action == "get":
            with st.lock:
                return 200, job.resource(st), []
        op = str(uuid.uuid4())
        with st.lock:
            st.ops[op] = job
            if job.status not in FINAL and not job.cancel:
                job.cancel = True
                job.set("CancelRequested")
                procs = [job.proc] if job.proc else []
            else:
                procs = []
        kill_groups(procs, st.args.stop_grace)
        loc = "http://%s/_ops/%s?api-version=%s" % (self.headers.get("Host", ""), op, ver)
        return 202, None, [("Location", loc), ("Retry-After", "1")]

    def list_jobs(self, raw_path, query, ver, low):
        st = self.st
        tag = query.get("tag")
        start = 0
        if "$skip" in query:
            try:
                start = int(unb64url(query["$skip"]).decode())
                if start < 0:
                    raise ValueError
            except (ValueError, UnicodeDecodeError, TypeError):
                raise arm_error(400, "UserError", "The continuation token is not valid.")
        with st.lock:
            prefix = "/".join(low[:10]) + "/"
            jobs = [j for k, j in st.jobs.items() if k.startswith(prefix)
                    and (tag is None or tag in (j.body["properties"].get("tags") or {}))]
            page = [j.resource(st) for j in jobs[start:start + st.args.page_size]]
        out = {"value": page}
        if start + st.args.page_size < len(jobs):
            q = {"api-version": ver, "$skip": b64url(str(start + st.args.page_size).encode())}
            if tag is not None:
                q["tag"] = tag
            out["nextLink"] = "http://%s%s?%s" % (self.headers.get("Host", ""), raw_path, urllib.parse.urlencode(q))
        return 200, out, []

    def put_environment(self, raw_path, data):
        st = self.st
        try:
            body = json.loads(data.decode("utf-8"))
            image = body["properties"]["image"]
        except (ValueError, UnicodeDecodeError, KeyError, TypeError):
            raise arm_error(400, "UserError", "An environment version needs properties.image (a docker image).")
        if not isinstance(image, str) or not image.strip():
            raise arm_error(400, "UserError", "properties.image must be a docker image.")
        with st.lock:
            old = st.environments.get(raw_path.lower())
            if old is not None and old != image:
                raise arm_error(400, "UserError", "An environment version cannot be changed: this one exists with "
                                "another image.")
            st.environments[raw_path.lower()] = image
            st.stats["environments"] = len(st.environments)
        return (200 if old else 201), {"id": raw_path, "name": raw_path.rsplit("/", 1)[-1],
                                       "properties": {"image": image}}, []

    def put(self, job_path, name, job, data):
        st = self.st
        if not NAME_RE.match(name):
            raise arm_error(400, "UserError", "The job name '%s' is not valid: letters, digits, '-' and '_', at most "
                            "255, a letter or digit first." % name[:100])
        try:
            body = json.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise arm_error(400, "UserError", "The request body is not valid JSON.")
        local = check_job(st, body)
        with st.lock:
            if job is not None:
                keep = ("description", "tags", "displayName", "properties", "isArchived")
                old = {k: v for k, v in job.body["properties"].items() if k not in keep}
                new = {k: v for k, v in body["properties"].items() if k not in keep}
                if old != new:
                    raise arm_error(400, "UserError", "A job with this name already exists. If you are trying to "
                                    "create a new job, use a different name. If you are trying to update an existing "
                                    "job, the existing job's Settings, Inputs, Outputs, Jobs, InputBindings, "
                                    "OutputBindings cannot be changed. Only description, tags, displayName, "
                                    "properties, and isArchived can be updated.")
                return 200, job.resource(st), []
            job = Job(name, body, job_path, local)
            job.raw = data.decode("utf-8")
            st.jobs[job_path.lower()] = job
            st.stats["created"] += 1
            out = job.resource(st)
        threading.Thread(target=run_job, args=(st, job), daemon=True).start()
        return 201, out, []

    def control(self, method, path, data):
        st = self.st
        if path == "/_test/stats":
            with st.lock:
                s = json.loads(json.dumps(st.stats))
                s["jobs"] = {j.name: j.status for j in st.jobs.values()}
            return self.reply(200, s)
        if path == "/_test/fail" and method == "POST":
            set_fault(st, data)
            return self.reply(200, {"ok": True})
        if path == "/_test/token" and method == "POST":
            f = json.loads(data or b"{}")
            return self.reply(200, {"access_token": st.token(f.get("aud", MGMT_AUDIENCES[0]),
                                                             f.get("tid", next(iter(st.tenants), "")),
                                                             f.get("appid", "test"), f.get("exp_in", 3600))})
        if path.startswith("/_test/job/") and method == "POST":
            # {"command": ...}: the job's stored body as another client made it (its
            # process is not touched): a PUT of the original body is then refused
            name, f = path[len("/_test/job/"):], json.loads(data or b"{}")
            with st.lock:
                job = next((j for j in st.jobs.values() if j.name == name), None)
                if job:
                    job.body = json.loads(json.dumps(job.body))
                    job.body["properties"]["command"] = f["command"]
                    job.raw = json.dumps(job.body)
                    return self.reply(200, {"ok": True})
            return self.refuse(arm_error(404, "UserError", "Job %s not found." % name[:100]))
        if path.startswith("/_test/job/"):
            name = path[len("/_test/job/"):]
            with st.lock:
                job = next((j for j in st.jobs.values() if j.name == name), None)
                if job:
                    out = {"body": job.raw, "status": job.status, "history": list(job.history)}
                    if job.output and os.path.exists(job.output):
                        out["output"] = open(job.output, "rb").read().decode("utf-8", "replace")
                    return self.reply(200, out)
            return self.refuse(arm_error(404, "UserError", "Job %s not found." % name[:100]))
        return self.refuse(arm_error(404, "NotFound", path[:100]))

    def dispatch(self, method):
        st = self.st
        raw_path, _, raw_query = self.path.partition("?")
        data = self.body()
        if raw_path.startswith("/_test/"):
            return self.control(method, raw_path, data)
        with st.lock:
            st.stats["calls"] += 1
        query = dict(urllib.parse.parse_qsl(raw_query, keep_blank_values=True))
        m = re.match(r"^/([^/]+)/oauth2/v2\.0/token$", raw_path)
        action = "token" if m else {"GET": "get", "PUT": "put", "POST": "cancel"}.get(method)
        if action == "get" and raw_path.rstrip("/").lower().endswith("/jobs"):
            action = "list"
        if action == "put" and "/environments/" in raw_path.lower():
            action = "environment"
        if self.injected(action):
            return
        try:
            if m and method == "POST":
                return self.reply(200, self.token_endpoint(urllib.parse.unquote(m.group(1)), data))
            if raw_path.startswith("/_ops/") and method == "GET":
                self.authenticate(raw_path)
                with st.lock:
                    job = st.ops.get(raw_path[len("/_ops/"):])
                    done = job is not None and job.status in FINAL
                if job is None:
                    raise arm_error(404, "NotFound", "No such operation.")
                return self.reply(200 if done else 202, {"status": "Succeeded" if done else "InProgress"},
                                  [] if done else [("Retry-After", "1")])
            self.reply(*self.arm(method, raw_path, query, data))
        except ApiError as err:
            self.refuse(err)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common_args(ap, "cwd of the jobs' commands")
    ap.add_argument("--tenant", action="append", required=True, help="a tenant id (repeatable)")
    ap.add_argument("--client", action="append", default=[], help="CLIENT_ID:SECRET of a service principal")
    ap.add_argument("--client-cert", action="append", default=[],
                    help="CLIENT_ID:PEM a service principal with this certificate registered")
    ap.add_argument("--no-role", action="append", default=[],
                    help="a client id with no role on the workspaces (403 AuthorizationFailed)")
    ap.add_argument("--subscription", action="append", default=[], help="SUBSCRIPTION:TENANT")
    ap.add_argument("--workspace", action="append", default=[], help="SUBSCRIPTION/RESOURCEGROUP/WORKSPACE")
    ap.add_argument("--compute", action="append", default=[], help="a compute target of the workspaces")
    ap.add_argument("--datastore", action="append", default=[], help="NAME:DIR a datastore and where it is here")
    ap.add_argument("--api-version", action="append", default=None, help="accepted (default: 2023-04-01 and later)")
    ap.add_argument("--token-lifetime", type=int, default=3599)
    ap.add_argument("--page-size", type=int, default=20, help="jobs in a page of the jobs list (default 20)")
    ap.add_argument("--state-seconds", type=float, default=0.05, help="seconds in each state before Running")
    ap.add_argument("--stop-grace", type=float, default=5.0, help="seconds from SIGTERM to SIGKILL on cancel")
    ap.add_argument("--log-dir", help="where the jobs' output is kept (default: a new temporary directory)")
    args = ap.parse_args()
    args.api_version = args.api_version or ["2023-04-01", "2023-10-01", "2024-04-01", "2024-10-01"]
    st = State(args)
    serve(Handler, st, lambda: [j.proc for j in st.jobs.values() if j.proc], "datastores: %s" % (
        ", ".join("%s=%s" % kv for kv in sorted(st.datastores.items())) or "none"))


if __name__ == "__main__":
    main()

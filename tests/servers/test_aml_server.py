#!/usr/bin/python3
"""The Azure ML test server (aml_server.py): the client-credentials token flow and its
refusals, the bearer token checks (audience, expiry, tenant, a token not of the
server), ARM's api-version and resource checks, a command job walking the documented
states to Completed with its output on a datastore mapped to a local directory, a
failing job, cancel (CancelRequested, Canceled, the process gone, the operation), a job
PUT again (same: 200; different: 400 UserError), the workspace's computes, datastores
and environment versions, client assertions signed with a registered certificate (and
their refusals: another key, an unregistered certificate, expired, replayed), and
injected faults.

usage: test_aml_server.py
"""
import base64
import hashlib
import http.client
import json
import os
import subprocess
import time
import urllib.parse
import uuid

from servertest import ServerProcess, check, run_checks, server_log, wait_pid

CERT_CLIENT = "99999999-2222-3333-4444-555555555555"
TENANT, CLIENT, SECRET = "72f988bf-0000-4000-8000-000000000001", "11111111-2222-3333-4444-555555555555", "cl13nt-s3cr3t"
SUB, RG, WS = "00000000-aaaa-bbbb-cccc-000000000001", "rg-nni", "ws-nni"
API = "2023-04-01"


class Server(ServerProcess):
    def __init__(self, tmp):
        self.blob = os.path.join(tmp, "blob")
        os.makedirs(self.blob)
        self.cert, self.other = make_cert(tmp, "sp"), make_cert(tmp, "other")
        super().__init__("aml_server.py", tmp, ["--client-cert", CERT_CLIENT + ":" + self.cert + ".pem",
            "--tenant", TENANT, "--tenant", "other-tenant", "--client", CLIENT + ":" + SECRET, "--client", "norole:pw", "--no-role", "norole",
            "--subscription", SUB + ":" + TENANT, "--workspace", "%s/%s/%s" % (SUB, RG, WS), "--compute", "cpu-cluster",
            "--datastore", "workspaceblobstore:" + self.blob, "--state-seconds", "0.05", "--stop-grace", "1",
            "--page-size", "3"])

    def request(self, method, path, body=None, headers=None, form=False):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            h = dict(headers or {})
            if body is not None and not isinstance(body, bytes):
                body = (urllib.parse.urlencode(body) if form else json.dumps(body)).encode()
                h["Content-Type"] = "application/x-www-form-urlencoded" if form else "application/json"
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            raw = r.read()
            return r.status, (json.loads(raw) if raw else None), dict(r.getheaders())
        finally:
            c.close()

    def token(self, secret=SECRET, tenant=TENANT, client=CLIENT, scope="https://management.azure.com/.default",
              grant="client_credentials"):
        return self.request("POST", "/%s/oauth2/v2.0/token" % tenant, {"grant_type": grant, "client_id": client,
                                                                        "client_secret": secret, "scope": scope},
                            form=True)

    def arm(self, method, path, token, body=None, api=API):
        q = "?api-version=" + api if api else ""
        return self.request(method, path + q, body, {"Authorization": "Bearer " + token} if token else {})


def make_cert(tmp, name):
    """a self-signed RSA certificate: <base>.key, .crt, and .pem (both); returns <base>"""
    base = os.path.join(tmp, name)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", base + ".key", "-out",
                    base + ".crt", "-days", "2", "-subj", "/CN=" + name], check=True, stderr=subprocess.DEVNULL)
    with open(base + ".pem", "w") as f:
        f.write(open(base + ".key").read() + open(base + ".crt").read())
    return base


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def assertion(srv, key, crt, **claims):
    """a client assertion for CERT_CLIENT signed RS256 with key, x5t of crt (PEM files)"""
    der = subprocess.run(["openssl", "x509", "-in", crt, "-outform", "DER"], check=True, capture_output=True).stdout
    now = int(time.time())
    c = {"aud": "http://127.0.0.1:%d/%s/oauth2/v2.0/token" % (srv.port, TENANT), "iss": CERT_CLIENT,
         "sub": CERT_CLIENT, "jti": str(uuid.uuid4()), "nbf": now, "iat": now, "exp": now + 600}
    c.update(claims)
    head = b64url(json.dumps({"alg": "RS256", "typ": "JWT", "x5t": b64url(hashlib.sha1(der).digest())}).encode())
    data = head + "." + b64url(json.dumps(c).encode())
    sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key], input=data.encode(), check=True,
                         capture_output=True).stdout
    return data + "." + b64url(sig)


def cert_token(srv, jwt):
    return srv.request("POST", "/%s/oauth2/v2.0/token" % TENANT, {
        "grant_type": "client_credentials", "client_id": CERT_CLIENT, "scope": "https://management.azure.com/.default",
        "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer", "client_assertion": jwt},
        form=True)


def test_certificate(srv):
    good = assertion(srv, srv.cert + ".key", srv.cert + ".crt")
    code, out, _ = cert_token(srv, good)
    check(code == 200 and out["access_token"].count(".") == 2, "a client assertion signed with the registered "
          "certificate's key: a token")
    code, out, _ = cert_token(srv, good)
    check(code == 401 and "AADSTS700027" in out["error_description"], "the same assertion again (its jti): refused")
    code, out, _ = cert_token(srv, assertion(srv, srv.other + ".key", srv.cert + ".crt"))
    check(code == 401 and "AADSTS700027" in out["error_description"] and "signature" in out["error_description"],
          "signed with another key (x5t of the registered certificate): AADSTS700027 signature validation")
    code, out, _ = cert_token(srv, assertion(srv, srv.other + ".key", srv.other + ".crt"))
    check(code == 401 and "not registered" in out["error_description"], "another certificate: not registered")
    code, out, _ = cert_token(srv, assertion(srv, srv.cert + ".key", srv.cert + ".crt", exp=int(time.time()) - 5))
    check(code == 401 and "AADSTS700024" in out["error_description"], "an expired assertion: AADSTS700024")
    code, out, _ = cert_token(srv, assertion(srv, srv.cert + ".key", srv.cert + ".crt", aud="https://elsewhere/"))
    check(code == 401 and "audience" in out["error_description"], "an assertion for another audience: refused")


def test_workspace(srv, tok):
    code, out, _ = srv.arm("GET", ws_path() + "/computes/cpu-cluster", tok)
    check(code == 200 and out["properties"]["computeType"] == "AmlCompute", "GET a compute")
    code, out, _ = srv.arm("GET", ws_path() + "/computes/gpu-nope", tok)
    check(code == 404 and out["error"]["code"] == "UserError" and "gpu-nope" in out["error"]["message"],
          "an unknown compute: 404 UserError naming it")
    code, out, _ = srv.arm("GET", ws_path() + "/datastores/workspaceblobstore", tok)
    check(code == 200 and out["properties"]["datastoreType"] == "AzureBlob", "GET a datastore")
    code, out, _ = srv.arm("GET", ws_path() + "/datastores/nostore", tok)
    check(code == 404 and "nostore" in out["error"]["message"], "an unknown datastore: 404 naming it")
    env = ws_path() + "/environments/trialq-nni/versions/1"
    code, out, _ = srv.arm("PUT", env, tok, {"properties": {"image": "example/nni:1"}})
    check(code == 201 and out["properties"]["image"] == "example/nni:1", "PUT an environment version: 201")
    code, _, _ = srv.arm("PUT", env, tok, {"properties": {"image": "example/nni:1"}})
    check(code == 200, "the same environment version again: 200")
    code, out, _ = srv.arm("PUT", env, tok, {"properties": {"image": "example/nni:2"}})
    check(code == 400 and out["error"]["code"] == "UserError", "another image under that version: 400 UserError")
    code, out, _ = srv.arm("PUT", ws_path() + "/jobs/env-nope", tok, command_job(
        "true", environmentId=ws_path() + "/environments/trialq-nni/versions/9"))
    check(code == 400 and "not found" in out["error"]["message"], "a job in an unregistered environment: 400")
    code, _, _ = srv.arm("PUT", ws_path() + "/jobs/env-ok", tok, command_job("true", environmentId=env))
    check(code == 201, "a job in a registered environment: 201")


def ws_path(sub=SUB, rg=RG, ws=WS):
    return "/subscriptions/%s/resourceGroups/%s/providers/Microsoft.MachineLearningServices/workspaces/%s" % (
        sub, rg, ws)


def command_job(command, **more):
    p = {"jobType": "Command", "command": command, "displayName": "trial",
         "environmentId": "azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu@latest",
         "computeId": ws_path() + "/computes/cpu-cluster", "experimentName": "nni_exp_abc",
         "outputs": {"trial": {"jobOutputType": "uri_folder", "mode": "ReadWriteMount",
                               "uri": "azureml://datastores/workspaceblobstore/paths/nni/abc/trials/t1"}},
         "inputs": {"lr": {"jobInputType": "literal", "value": "0.01"}},
         "environmentVariables": {"NNI_EXP_ID": "abc"}}
    p.update(more)
    return {"properties": p}


def list_all(srv, tok, query):
    """the names in the jobs list, following nextLink, and the number of pages"""
    names, pages, url = [], 0, ws_path() + "/jobs?api-version=" + API + query
    while url:
        code, out, _ = srv.request("GET", url, headers={"Authorization": "Bearer " + tok})
        check(code == 200, "a page of the jobs list: %s" % code)
        names += [x["name"] for x in out["value"]]
        pages += 1
        nxt = urllib.parse.urlsplit(out.get("nextLink", ""))
        check(not out.get("nextLink") or nxt.netloc == "127.0.0.1:%d" % srv.port, "nextLink on this host")
        url = nxt.path + "?" + nxt.query if out.get("nextLink") else None
    return names, pages


def wait(srv, tok, name, final, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        code, j, _ = srv.arm("GET", ws_path() + "/jobs/" + name, tok)
        if code == 200 and j["properties"]["status"] in final:
            return j
        time.sleep(0.05)
    return None


def test_tokens(srv):
    code, out, _ = srv.token()
    check(code == 200 and out["token_type"] == "Bearer" and out["expires_in"] > 3000 and out["access_token"].count(".") == 2,
          "client credentials: a bearer token, JWT-shaped, with its lifetime")
    claims = json.loads(__import__("base64").urlsafe_b64decode(out["access_token"].split(".")[1] + "=="))
    check(claims["aud"] == "https://management.azure.com" and claims["tid"] == TENANT and claims["appid"] == CLIENT
          and claims["exp"] > time.time(), "the token's claims: aud, tid, appid, exp")
    code, out, _ = srv.token(secret="wrong")
    check(code == 401 and out["error"] == "invalid_client" and "AADSTS7000215" in out["error_description"]
          and SECRET not in json.dumps(out), "a wrong secret: 401 invalid_client (AADSTS7000215)")
    code, out, _ = srv.token(tenant="no-such-tenant")
    check(code == 400 and "AADSTS90002" in out.get("error_description", ""), "an unknown tenant: AADSTS90002")
    code, out, _ = srv.token(client="nobody")
    check(code == 400 and out["error"] == "unauthorized_client", "an unknown client: unauthorized_client")
    code, out, _ = srv.token(scope="https://management.azure.com")
    check(code == 400 and out["error"] == "invalid_scope", "a scope without /.default: invalid_scope")
    code, out, _ = srv.token(grant="password")
    check(code == 400 and out["error"] == "unsupported_grant_type", "another grant type: unsupported_grant_type")


def test_bearer(srv):
    tok = srv.token()[1]["access_token"]
    code, out, _ = srv.arm("GET", ws_path() + "/jobs", tok)
    check(code == 200 and out == {"value": []}, "a good token lists the jobs")
    code, out, h = srv.arm("GET", ws_path() + "/jobs", None)
    check(code == 401 and out["error"]["code"] == "AuthenticationFailed" and "WWW-Authenticate" in h,
          "no token: 401 AuthenticationFailed, WWW-Authenticate")
    expired = srv.request("POST", "/_test/token", {"exp_in": -5})[1]["access_token"]
    code, out, _ = srv.arm("GET", ws_path() + "/jobs", expired)
    check(code == 401 and out["error"]["code"] == "ExpiredAuthenticationToken", "an expired token: ExpiredAuthenticationToken")
    storage = srv.token(scope="https://storage.azure.com/.default")[1]["access_token"]
    code, out, _ = srv.arm("GET", ws_path() + "/jobs", storage)
    check(code == 401 and out["error"]["code"] == "InvalidAuthenticationTokenAudience",
          "a token for storage: InvalidAuthenticationTokenAudience")
    other = srv.request("POST", "/_test/token", {"tid": "other-tenant"})[1]["access_token"]
    code, out, _ = srv.arm("GET", ws_path() + "/jobs", other)
    check(code == 401 and out["error"]["code"] == "InvalidAuthenticationTokenTenant", "another tenant's token: refused")
    forged = tok[:-4] + ("AAAA" if not tok.endswith("AAAA") else "BBBB")
    code, out, _ = srv.arm("GET", ws_path() + "/jobs", forged)
    check(code == 401 and out["error"]["code"] == "InvalidAuthenticationToken", "a forged token: InvalidAuthenticationToken")
    code, out, _ = srv.arm("GET", ws_path() + "/jobs", tok, api=None)
    check(code == 400 and out["error"]["code"] == "MissingApiVersionParameter", "no api-version: MissingApiVersionParameter")
    code, out, _ = srv.arm("GET", ws_path() + "/jobs", tok, api="2019-01-01")
    check(code == 400 and out["error"]["code"] == "NoRegisteredProviderFound", "an old api-version: NoRegisteredProviderFound")
    code, out, _ = srv.arm("GET", ws_path(ws="ws-other") + "/jobs", tok)
    check(code == 404 and out["error"]["code"] == "ResourceNotFound", "an unknown workspace: 404 ResourceNotFound")
    norole = srv.token(client="norole", secret="pw")[1]["access_token"]
    code, out, _ = srv.arm("GET", ws_path() + "/computes/cpu-cluster", norole)
    check(code == 403 and out["error"]["code"] == "AuthorizationFailed" and "computes/read" in out["error"]["message"],
          "a principal without a role: 403 AuthorizationFailed naming the action")
    code, out, _ = srv.arm("GET", ws_path(rg="rg-other") + "/jobs", tok)
    check(code == 404 and out["error"]["code"] == "ResourceGroupNotFound", "an unknown resource group: ResourceGroupNotFound")
    return tok


def test_jobs(srv, tok):
    path = ws_path() + "/jobs/nni-abc-t1"
    cmd = "echo hello aml; echo lr=${{inputs.lr}} > ${{outputs.trial}}/metrics; echo $NNI_EXP_ID $AZUREML_RUN_ID; sleep 0.3"
    code, out, _ = srv.arm("PUT", path, tok, command_job(cmd))
    check(code == 201 and out["name"] == "nni-abc-t1" and out["properties"]["status"] == "NotStarted"
          and "Studio" in out["properties"]["services"], "PUT a command job: 201, NotStarted, a Studio URL")
    j = wait(srv, tok, "nni-abc-t1", ("Completed", "Failed", "Canceled"))
    hist = srv.request("GET", "/_test/job/nni-abc-t1")[1]
    check(j is not None and j["properties"]["status"] == "Completed" and hist["history"] == [
        "NotStarted", "Starting", "Provisioning", "Preparing", "Queued", "Running", "Finalizing", "Completed"],
        "the job walks NotStarted, Starting, Provisioning, Preparing, Queued, Running, Finalizing, Completed (%s)"
        % hist.get("history"))
    metrics = os.path.join(srv.blob, "nni", "abc", "trials", "t1", "metrics")
    check(os.path.exists(metrics) and open(metrics).read() == "lr=0.01\n", "the output went to the datastore's directory")
    check("hello aml" in hist.get("output", "") and "abc nni-abc-t1" in hist.get("output", ""),
          "the command ran with its environmentVariables and AZUREML_RUN_ID")
    code, out, _ = srv.arm("PUT", path, tok, command_job(cmd))
    check(code == 200 and out["properties"]["status"] == "Completed", "the same job PUT again: 200, the job as it is")
    code, out, _ = srv.arm("PUT", path, tok, command_job("echo other"))
    check(code == 400 and out["error"]["code"] == "UserError" and "already exists" in out["error"]["message"],
          "another job under that name: 400 UserError")
    code, out, _ = srv.arm("PUT", ws_path() + "/jobs/nni-abc-t2", tok, command_job("exit 4"))
    j = wait(srv, tok, "nni-abc-t2", ("Completed", "Failed", "Canceled"))
    check(j is not None and j["properties"]["status"] == "Failed", "a command exiting 4: Failed")
    code, out, _ = srv.arm("PUT", ws_path() + "/jobs/nni-abc-t3", tok,
                           command_job("echo $$ > ${{outputs.trial}}/pid; trap 'sleep 0.8; exit 1' TERM; "
                                       "while true; do sleep 0.1; done"))
    wait(srv, tok, "nni-abc-t3", ("Running",))
    pid = wait_pid(os.path.join(srv.blob, "nni", "abc", "trials", "t1", "pid"))
    code, out, h = srv.arm("POST", ws_path() + "/jobs/nni-abc-t3/cancel", tok)
    check(code == 202 and "Location" in h, "cancel: 202 Accepted with a Location")
    code, j, _ = srv.arm("GET", ws_path() + "/jobs/nni-abc-t3", tok)
    check(j["properties"]["status"] == "CancelRequested", "then CancelRequested")
    j = wait(srv, tok, "nni-abc-t3", ("Canceled", "Completed", "Failed"))
    loc = urllib.parse.urlsplit(h.get("Location", "http://x/none"))
    op = srv.request("GET", loc.path + "?" + loc.query, headers={"Authorization": "Bearer " + tok})
    check(j is not None and j["properties"]["status"] == "Canceled" and not os.path.exists("/proc/%d" % pid)
          and op[0] == 200, "Canceled, its process gone, the operation done")
    check(srv.request("GET", loc.path + "?" + loc.query)[0] == 401, "the operation needs the token too")
    code, out, _ = srv.arm("GET", ws_path() + "/jobs/nni-nope", tok)
    check(code == 404 and out["error"]["code"] == "UserError", "an unknown job: 404 UserError")
    code, out, _ = srv.arm("PUT", ws_path() + "/jobs/bad1", tok,
                           command_job("true", computeId=ws_path() + "/computes/gpu-nope"))
    check(code == 400 and "gpu-nope" in out["error"]["message"], "an unknown compute: 400 UserError naming it")
    code, out, _ = srv.arm("PUT", ws_path() + "/jobs/bad2", tok, command_job(
        "true", outputs={"o": {"jobOutputType": "uri_folder", "uri": "azureml://datastores/nostore/paths/x"}}))
    check(code == 400 and "nostore" in out["error"]["message"], "an unknown datastore: 400 UserError naming it")
    code, out, _ = srv.arm("PUT", ws_path() + "/jobs/bad3", tok, command_job("echo ${{inputs.missing}}"))
    check(code == 400 and "inputs.missing" in out["error"]["message"], "an undefined ${{inputs.X}}: 400")
    names, pages = list_all(srv, tok, "")
    check(sorted(names) == ["env-ok", "nni-abc-t1", "nni-abc-t2", "nni-abc-t3"] and pages == 2,
          "the list holds the four jobs, in two pages of 3 (nextLink)")
    code, _, _ = srv.arm("PUT", ws_path() + "/jobs/nni-abc-t4", tok, command_job("true", tags={"nni_exp_abc": "abc"}))
    names, pages = list_all(srv, tok, "&tag=nni_exp_abc")
    check(code == 201 and names == ["nni-abc-t4"] and pages == 1, "tag=KEY lists only the jobs with that tag key")
    code, out, _ = srv.request("GET", ws_path() + "/jobs?api-version=%s&$skip=nope" % API,
                               headers={"Authorization": "Bearer " + tok})
    check(code == 400 and out["error"]["code"] == "UserError", "a continuation token not of ours: 400 UserError")


def test_faults(srv, tok):
    srv.request("POST", "/_test/fail", {"mode": "status", "status": 503, "count": 1})
    code, out, _ = srv.arm("GET", ws_path() + "/jobs", tok)
    check(code == 503, "an injected 503")
    srv.request("POST", "/_test/fail", {"mode": "throttle", "count": 1, "action": "token"})
    code, out, h = srv.token()
    check(code == 429 and h.get("Retry-After") == "1", "a throttled token request: 429 with Retry-After")
    srv.request("POST", "/_test/fail", {"mode": "drop_after", "count": 1, "action": "put"})
    try:
        srv.arm("PUT", ws_path() + "/jobs/nni-abc-lost", tok, command_job("true"))
        dropped = False
    except (http.client.HTTPException, ConnectionError):
        dropped = True
    code, out, _ = srv.arm("PUT", ws_path() + "/jobs/nni-abc-lost", tok, command_job("true"))
    check(dropped and code == 200, "a PUT answered by a dropped connection: the retry finds the job (200)")


def checks(tmp):
    with Server(tmp) as srv:
        test_tokens(srv)
        tok = test_bearer(srv)
        test_certificate(srv)
        test_workspace(srv, tok)
        test_jobs(srv, tok)
        test_faults(srv, tok)
    check(SECRET not in server_log(tmp), "the client secret is not in the server's log")


def main():
    run_checks("aml-server-test-", checks)

if __name__ == "__main__":
    main()

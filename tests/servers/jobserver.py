"""Pieces the test servers of cluster APIs share (pai_server.py, dlc_server.py,
aml_server.py, dlts_server.py): a JSON HTTP handler, the fault schedule that POST
/_test/fail sets, stopping a job's process groups, running a command with storage that a
job sees at another path, and serving on loopback (HTTP, or HTTPS with --tls-cert) until
SIGTERM (which kills the jobs' processes)."""
import json
import os
import random
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ServerState:
    """what every server's state holds: its args, a lock with its condition, a random
    generator (seeded by args.seed), the fault POST /_test/fail scheduled, counters"""

    def __init__(self, args, stats):
        self.args = args
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.rng = random.Random(getattr(args, "seed", None))
        self.fail = None
        self.stats = stats


def kill_groups(procs, grace):
    """SIGTERM to the process group of each of procs (Popen, start_new_session), SIGKILL
    to what is left after grace seconds; in a thread of its own."""
    def run():
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.time() + grace
        while time.time() < deadline and any(p.poll() is None for p in procs):
            time.sleep(0.05)
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    threading.Thread(target=run, daemon=True).start()


def can_bind(no_bind):
    """whether this process may bind-mount in a private mount namespace (unshare, root)"""
    return not no_bind and subprocess.call(["unshare", "--mount", "/bin/true"], stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL) == 0


def mounted_argv(cmd, mounts, bind, tag):
    """argv running cmd with bash where each (path the job expects, local directory) of
    mounts is seen at that path: bind-mounted in a private mount namespace when bind
    (can_bind), else each path rewritten to its directory in cmd (the longest first)."""
    mounts = [((m.rstrip("/") or "/"), l) for m, l in mounts]
    if bind and mounts:
        script = ('cmd=$1; shift; while [ $# -gt 0 ]; do mkdir -p "$1" && mount --bind "$2" "$1" || exit 126; '
                  'shift 2; done; exec /bin/bash -c "$cmd"')
        argv = ["unshare", "--mount", "--propagation", "private", "/bin/bash", "-c", script, tag, cmd]
        for m, l in mounts:
            argv += [m, l]
        return argv
    for m, l in sorted(mounts, key=lambda x: -len(x[0])):
        cmd = cmd.replace(m, l)
    return ["/bin/bash", "-c", cmd]


def set_fault(st, data):
    """POST /_test/fail: {"status", "mode", "delay", "count": N | "seconds": S, ...} becomes
    st.fail (nothing of status, mode and delay: no fault); the stats' "fault_served" (how
    many requests met the fault last set, take_fault) starts again at 0."""
    f = json.loads(data or b"{}")
    with st.lock:
        st.stats["fault_served"] = 0
        if not f.get("status") and not f.get("mode") and not f.get("delay"):
            st.fail = None
        else:
            if "seconds" in f:
                f["until"] = time.time() + float(f.pop("seconds"))
            st.fail = f


def take_fault(st, action=None):
    """The fault this request gets from st.fail, counted, or None; with st.lock held. A
    fault naming an "action" applies only to requests of that action."""
    f = st.fail
    if not f:
        return None
    if "until" in f and time.time() > f["until"]:
        st.fail = None
        return None
    if f.get("action") not in (None, action):
        return None
    if "count" in f:
        if f["count"] <= 0:
            st.fail = None
            return None
        f["count"] -= 1
    st.stats["injected"] += 1
    st.stats["fault_served"] = st.stats.get("fault_served", 0) + 1
    return f


def next_fault(st, action):
    """(mode, status, delay) of the fault this request gets from st.fail (take_fault), or
    None; with st.lock held"""
    f = take_fault(st, action)
    return (f.get("mode", "status"), f.get("status"), f.get("delay", 0)) if f else None


class JsonHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive; each method goes to self.dispatch(method)."""
    protocol_version = "HTTP/1.1"
    st = None
    # TCP_NODELAY: the head and the body are two writes; with Nagle's algorithm and the
    # client's delayed ACK each answer on a kept-alive connection would wait ~40 ms
    disable_nagle_algorithm = True
    name = "server"

    def log_message(self, fmt, *args):
        if self.st.args.verbose:
            sys.stderr.write("%s: %s\n" % (self.name, fmt % args))

    def send_json(self, code, obj, ctype="application/json", headers=()):
        body = b"" if obj is None else (json.dumps(obj) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def drop(self):
        """closes the connection without an answer"""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def fault_dropped(self, mode, delay):
        """a fault's first steps: sleeps delay seconds, then mode "drop" drops the
        connection (True: nothing more to do), "drop_after" has the answer dropped
        (self.drop_answer) once the request is handled; other modes are the caller's"""
        if delay:
            time.sleep(delay)
        if mode == "drop":
            self.drop()
            return True
        if mode == "drop_after":
            self.drop_answer = True
        return False

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_DELETE(self):
        self.dispatch("DELETE")


def common_args(ap, workdir_help):
    """The options every test server has."""
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", help="write the port here once listening")
    ap.add_argument("--workdir", default="/tmp", help=workdir_help)
    ap.add_argument("--no-bind", action="store_true", help="rewrite mount paths instead of bind-mounting")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM; with --tls-key)")
    ap.add_argument("--tls-key", help="the certificate's private key (PEM)")


def serve(handler, st, procs, note):
    """Serves handler (its st set to st) on 127.0.0.1:args.port, writes the port to
    args.port_file (atomically) once listening; SIGTERM or SIGINT kill the process groups
    of the Popen objects procs() returns (called with st.lock held) and end it."""
    handler.st = st
    args = st.args
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    srv.daemon_threads = True
    port = srv.server_address[1]
    if getattr(args, "tls_cert", None):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        # the handshake in the connection's thread, not in accept(): a client that
        # refuses the certificate does not hold the others up
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
        note += ", HTTPS"

    def shutdown(signum, frame):
        with st.lock:
            running = procs()
        for p in running:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os._exit(0)
    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, args.port_file)
    sys.stderr.write("%s: listening on 127.0.0.1:%d (%s)\n" % (handler.name, port, note))
    srv.serve_forever()

"""Pieces the test servers of cluster APIs share (pai_server.py, dlc_server.py): a JSON
HTTP handler, the fault schedule that POST /_test/fail sets, stopping a job's process
groups, and serving on loopback until SIGTERM (which kills the jobs' processes)."""
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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


def set_fault(st, data):
    """POST /_test/fail: {"status", "mode", "delay", "count": N | "seconds": S, ...} becomes
    st.fail (nothing of status, mode and delay: no fault)."""
    f = json.loads(data or b"{}")
    with st.lock:
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
    return f


class JsonHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive; each method goes to self.dispatch(method)."""
    protocol_version = "HTTP/1.1"
    st = None
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


def serve(handler, st, procs, note):
    """Serves handler (its st set to st) on 127.0.0.1:args.port, writes the port to
    args.port_file (atomically) once listening; SIGTERM or SIGINT kill the process groups
    of the Popen objects procs() returns (called with st.lock held) and end it."""
    handler.st = st
    args = st.args
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    srv.daemon_threads = True
    port = srv.server_address[1]

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

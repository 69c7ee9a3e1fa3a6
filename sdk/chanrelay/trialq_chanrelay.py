"""trialq's HTTP trial channel inside a cluster trial's pod (issue 23).

    python3 trialq_chanrelay.py -- COMMAND [ARG...]

NNI v3's HTTP trial command channel (spec 5.4) for one trial, served on 127.0.0.1 by
this process while it runs the trial command as its child, so that the trial's requests
are answered while the api is down or restarted: the same idea as a local trial's group
leader (supervise/chanserve.c), answering exactly as it does, in Python's standard
library because a pod's image holds no trialq binary. The worker writes this file into
the trial's dir on the shared storage as .nni/chanrelay.py and the role's launch script
(workers/kube/submit.c, kube_role_script) starts it when the image has python3 >= 3.5.

It reads NNI_TRIAL_COMMAND_CHANNEL (the api's channel URL: its path names the trial and
carries its token), NNI_TRIAL_JOB_ID and NNI_SYS_DIR, sets NNI_TRIAL_COMMAND_CHANNEL to
http://127.0.0.1:<a free port><the same path> for the command, and exits as it did (its
exit code, or the signal that ended it raised again); SIGTERM, SIGINT, SIGHUP, SIGQUIT,
SIGUSR1 and SIGUSR2 are passed on to it. When it cannot listen it says so on stderr and
execs the command with the api's channel, as before.

    PUT {"type":"request_parameter"}  queues {"type":"parameter","parameter":<the record
                                      in $NNI_SYS_DIR/parameter.cfg>} (read when asked;
                                      looked at again every 100 ms until it is there)
    PUT {"type":"metric","metric":M}  appends M to $NNI_SYS_DIR/.nni/metrics as NNI's
                                      file channel frames it ("ME" + 6-digit length + M +
                                      "\\n"), one write on an O_APPEND descriptor, before
                                      the 200: the worker reads that file from the shared
                                      storage as for the file channel, and the metric table
                                      absorbs a record read twice
    GET                               the next queued command; 408 after 1 s without one
                                      (a newer GET ends the older one with 408); 410 once
                                      a stop (SIGTERM, SIGINT, SIGHUP) reached the trial

Any other path: 404. 415 without a JSON content type, 400 for a body that is not a
command or a metric that is not a metric record, 403 for a record of another trial, 405
for other methods; heads over 8 kB get 431, bodies over 4 MB 413, a body on a GET 400,
chunked bodies 501, and the connection closes after each of these. tests/chan/cases.txt
holds the cases it answers as the api and a local trial's leader do (common/trialchan.c:
the channel's one implementation in C), tests/sdk/test_chanrelay.py runs them here."""
import hmac
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

MAX_HEAD = 8 << 10
MAX_BODY = 4 << 20
MAX_RECORD = 1000000  # NNI's 6-digit length field
POLL_S = 1.0
IDLE_S = 120.0
MAX_QUEUED = 16
MAX_CONNS = 62
PARAM_RETRY_S = 0.1
REASONS = {100: 'Continue', 200: 'OK', 400: 'Bad Request', 403: 'Forbidden', 404: 'Not Found',
           405: 'Method Not Allowed', 408: 'Request Timeout', 410: 'Gone', 413: 'Payload Too Large',
           415: 'Unsupported Media Type', 417: 'Expectation Failed',
           431: 'Request Header Fields Too Large', 500: 'Internal Server Error', 501: 'Not Implemented',
           503: 'Service Unavailable', 505: 'HTTP Version Not Supported'}
TCHARS = frozenset(b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def log(msg):
    sys.stderr.write('trialq-chanrelay: %s\n' % msg)
    sys.stderr.flush()


def escaped(text, limit=200):
    """The trial's text for one log line (as the api's logs show it): backslash, \\n, \\r,
    \\t, other control characters as \\xNN, C1 controls, surrogates and line separators
    as \\uNNNN, cut at limit characters."""
    out = []
    for ch in text[:limit]:
        o = ord(ch)
        if ch in '\\\n\r\t':
            out.append({'\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t'}[ch])
        elif o < 0x20 or o == 0x7f:
            out.append('\\x%02x' % o)
        elif 0x80 <= o <= 0x9f or 0xd800 <= o <= 0xdfff or o in (0x2028, 0x2029):
            out.append('\\u%04x' % o)
        else:
            out.append(ch)
    return ''.join(out) + ('...' if len(text) > limit else '')


def without_token(url):
    """A channel URL for messages: its token (/env/<token>/<trial>) replaced."""
    return re.sub(r'/env/[^/]*/', '/env/<token>/', url)


def dumps(v):
    return json.dumps(v, separators=(',', ':'))


class BadRequest(Exception):
    def __init__(self, code, msg):
        Exception.__init__(self, msg)
        self.code = code
        self.msg = msg


class Head(object):
    pass


def parse_head(raw):
    """The request head (bytes up to and with its empty line), as common/http1.c reads it."""
    lines = raw.split(b'\n')
    line = lines[0].rstrip(b'\r')
    i = 0
    while i < len(line) and line[i] in TCHARS:
        i += 1
    if i == 0 or i >= len(line) or line[i:i + 1] != b' ':
        raise BadRequest(400, 'malformed request line')
    h = Head()
    h.method = line[:i]
    rest = line[i + 1:]
    sp = rest.find(b' ')
    if sp <= 0 or not rest.startswith(b'/'):
        raise BadRequest(400, 'malformed request line: the target must be a path')
    h.target = rest[:sp]
    v = rest[sp + 1:].strip(b' \t')
    if len(v) != 8 or not v.startswith(b'HTTP/1.'):
        raise BadRequest(505 if v.startswith(b'HTTP/') else 400, 'malformed request line: no HTTP version')
    if v[7:8] not in (b'0', b'1'):
        raise BadRequest(505, 'only HTTP/1.0 and HTTP/1.1')
    h.http10 = v[7:8] == b'0'
    h.length = -1
    h.json = h.close = h.keep_alive = h.expect = False
    for line in lines[1:]:
        line = line.rstrip(b'\r')
        if not line:
            break
        if line[:1] in (b' ', b'\t'):
            raise BadRequest(400, 'folded header lines are not accepted')
        c = 0
        while c < len(line) and line[c] in TCHARS:
            c += 1
        if c == 0 or c >= len(line) or line[c:c + 1] != b':':
            raise BadRequest(400, 'malformed header line')
        name = line[:c].lower()
        value = line[c + 1:].strip(b' \t')
        if name == b'content-length':
            if not value or len(value) > 18 or not value.isdigit():
                raise BadRequest(400, 'bad Content-Length')
            n = int(value)
            if h.length >= 0 and h.length != n:
                raise BadRequest(400, 'two different Content-Length headers')
            if n > MAX_BODY:
                raise BadRequest(413, 'body over the limit')
            h.length = n
        elif name == b'transfer-encoding':
            raise BadRequest(501, 'Transfer-Encoding is not supported on the trial channel: send Content-Length')
        elif name == b'content-type':
            lv = value.lower()
            h.json = lv.startswith(b'application/json') and lv[16:17] in (b'', b';', b' ')
        elif name == b'connection':
            tokens = [t.strip(b' \t').lower() for t in value.split(b',')]
            h.close = h.close or b'close' in tokens
            h.keep_alive = h.keep_alive or b'keep-alive' in tokens
        elif name == b'expect':
            if value.lower() != b'100-continue':
                raise BadRequest(417, 'unsupported Expect')
            h.expect = True
    if h.length < 0:
        h.length = 0
    if h.length and h.method not in (b'POST', b'PUT', b'PATCH'):  # no reader takes it for the next request
        raise BadRequest(400, 'a body on a method that has none')
    return h


class Channel(object):
    def __init__(self, trial_id, path, sys_dir):
        self.trial_id = trial_id
        self.path = path
        self.metrics_path = os.path.join(sys_dir, '.nni', 'metrics')
        self.param_path = os.path.join(sys_dir, 'parameter.cfg')
        self.cond = threading.Condition()
        self.queue = []
        self.poll_gen = 0
        self.closing = False
        self.param_wanted = False
        self.param_thread = None
        self.mfd = -1
        self.mlock = threading.Lock()

    # ---- the command queue ----
    def push(self, cmd):
        with self.cond:
            if len(self.queue) == MAX_QUEUED:  # a trial that asks and never reads: keep the newest
                self.queue.pop(0)
            self.queue.append(cmd)
            self.cond.notify_all()

    def poll(self):
        """A GET: (status, body)."""
        with self.cond:
            self.poll_gen += 1
            mine = self.poll_gen
            self.cond.notify_all()  # one poll at a time: the older one ends as if it timed out
            if not self.queue and self.closing:
                return 410, None
            deadline = time.monotonic() + POLL_S
            while True:
                if self.poll_gen != mine:
                    return 408, None
                if self.queue:
                    return 200, self.queue.pop(0)
                left = deadline - time.monotonic()
                if left <= 0:
                    return (410 if self.closing else 408), None
                self.cond.wait(left)

    def close(self):
        with self.cond:
            self.closing = True
            self.cond.notify_all()

    # ---- parameters ----
    def try_parameter(self):
        try:
            with open(self.param_path, 'rb') as f:
                rec = f.read()
            rec = rec.rstrip(b'\n\r ')
            text = rec.decode('utf-8')
            if not text or '\0' in text or 'parameters' not in json.loads(text):
                return False
        except (OSError, ValueError, TypeError):
            return False  # not written yet (or being replaced): look again soon
        self.push(dumps({'type': 'parameter', 'parameter': text}))
        return True

    def param_loop(self):
        while True:
            with self.cond:
                if not self.param_wanted:
                    self.param_thread = None
                    return
            if self.try_parameter():
                with self.cond:
                    self.param_wanted = False
                    self.param_thread = None
                return
            time.sleep(PARAM_RETRY_S)

    def want_parameter(self):
        with self.cond:
            self.param_wanted = True
            if self.param_thread is not None:
                return
            self.param_thread = threading.Thread(target=self.param_loop)
            self.param_thread.daemon = True
            self.param_thread.start()

    # ---- metrics ----
    def append_metric(self, m):
        """Appends one record to .nni/metrics: an HTTP status."""
        if len(m) + 1 >= MAX_RECORD:
            return 413
        rec = ('ME%06d' % (len(m) + 1)).encode('ascii') + m + b'\n'
        with self.mlock:
            try:
                if self.mfd < 0:
                    self.mfd = os.open(self.metrics_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                # one write on an O_APPEND descriptor: a reader sees whole records, also
                # beside another role of the trial appending to the same file; in the
                # kernel (the NFS client) before the 200, as chanserve.c's append_metric
                n = os.write(self.mfd, rec)
            except OSError as e:
                self.last_error = str(e)
                return 503
        if n != len(rec):
            self.last_error = 'short write'
            return 503
        return 200

    def on_metric(self, v):
        """A metric command's "metric": (status, error message)."""
        if not isinstance(v, str):
            return 400, 'body: a metric command needs "metric": the metric record as a JSON string'
        short = v[:80]
        try:
            m = json.loads(v)
        except ValueError:
            m = None
        if not isinstance(m, dict):
            return 400, 'metric is not a JSON object: %s' % short
        if m.get('type') not in ('PERIODICAL', 'FINAL'):
            return 400, 'metric has no type PERIODICAL or FINAL: %s' % short
        if 'value' not in m:
            return 400, 'metric has no value: %s' % short
        tj = m.get('trial_job_id')
        if 'trial_job_id' in m and tj is not None and tj != self.trial_id:
            # the record names its trial: only ours
            return 403, 'metric of trial %s refused on the channel of trial %s' % (
                str(tj)[:40] if isinstance(tj, str) else '?', self.trial_id)
        raw = v.encode('utf-8', 'surrogatepass')
        code = self.append_metric(raw)
        if code == 413:
            return 413, 'metric record of %d bytes: NNI\'s limit is %d' % (len(raw), MAX_RECORD - 1)
        if code != 200:
            return 503, 'metric not stored: %s: %s' % (self.metrics_path, getattr(self, 'last_error', '?'))
        return 200, None

    def on_put(self, body, json_body):
        if not json_body:
            return 415, 'PUT %s: Content-Type must be application/json' % self.trial_id
        try:
            cmd = json.loads(body.decode('utf-8'))
        except ValueError:
            cmd = None
        if not isinstance(cmd, dict):
            return 400, 'body: not a JSON object (a trial command)'
        t = cmd.get('type')
        if not isinstance(t, str):
            return 400, 'body: the command has no string "type"'
        if t == 'request_parameter':
            self.want_parameter()
            return 200, None
        if t == 'metric':
            if 'metric' not in cmd:
                return 400, 'body: a metric command needs "metric": the metric record as a JSON string'
            return self.on_metric(cmd['metric'])
        log('trial channel %s: unexpected command type %s' % (self.trial_id, escaped(t)))
        return 200, None


class Conn(object):
    def __init__(self, ch, sock):
        self.ch = ch
        self.sock = sock
        self.buf = b''

    def send(self, code, body=None, close=False):
        data = body.encode('utf-8') if body else b''
        head = 'HTTP/1.1 %d %s\r\n%sContent-Length: %d\r\n%s%s\r\n' % (
            code, REASONS.get(code, 'Unknown'), 'Content-Type: application/json\r\n' if data else '', len(data),
            'Allow: GET, PUT\r\n' if code == 405 else '', 'Connection: close\r\n' if close else '')
        try:
            self.sock.sendall(head.encode('ascii') + data)
        except OSError:
            pass  # the peer is gone: nothing more to say

    def error(self, code, msg, close=False):
        self.send(code, dumps({'error': msg}), close)

    def fill(self):
        try:
            d = self.sock.recv(65536)
        except socket.timeout:
            return False
        except OSError:
            return False
        if not d:
            return False
        self.buf += d
        return True

    def run(self):
        self.sock.settimeout(IDLE_S)
        try:
            while self.one():
                pass
        finally:
            try:
                self.sock.close()
            except OSError:
                pass

    def one(self):
        """Serves one request: False once the connection is to be closed."""
        while True:
            end = -1
            for sep in (b'\n\n', b'\n\r\n'):  # an empty line (bare LFs accepted, as evhttp)
                i = self.buf.find(sep)
                if i >= 0 and (end < 0 or i + len(sep) < end):
                    end = i + len(sep)
            if end >= 0:
                break
            if len(self.buf) > MAX_HEAD:
                self.error(431, 'trial channel: request head too large', True)
                return False
            if not self.fill():
                return False
        if end > MAX_HEAD:
            self.error(431, 'trial channel: request head too large', True)
            return False
        try:
            h = parse_head(self.buf[:end])
        except BadRequest as e:
            self.error(e.code, 'trial channel: %s' % e.msg, True)
            return False
        continued = False
        while len(self.buf) < end + h.length:
            if h.expect and not continued:
                try:
                    self.sock.sendall(b'HTTP/1.1 100 Continue\r\n\r\n')
                except OSError:
                    return False
                continued = True
            if not self.fill():
                return False
        body = self.buf[end:end + h.length]
        self.buf = self.buf[end + h.length:]
        close = h.close or (h.http10 and not h.keep_alive)
        target = h.target.split(b'?', 1)[0]
        ch = self.ch
        if h.method not in (b'GET', b'PUT'):
            self.error(405, 'the trial command channel takes GET and PUT', True)
            return False
        if not hmac.compare_digest(target, ch.path.encode('utf-8', 'surrogateescape')):  # the path holds the token
            shown = target[:200].decode('utf-8', 'replace')
            self.error(404, '%s: this port serves the command channel of trial %s only' % (shown, ch.trial_id), close)
        elif h.method == b'PUT':
            code, msg = ch.on_put(body, h.json)
            if code == 200:
                self.send(200, None, close)
            else:
                self.error(code, msg, close)
        else:
            code, cmd = ch.poll()
            self.send(code, cmd, close)
        return not close


def serve(ch, lsock):
    slots = threading.BoundedSemaphore(MAX_CONNS)
    while True:
        slots.acquire()
        try:
            s, _ = lsock.accept()
        except OSError:
            slots.release()
            time.sleep(0.05)
            continue

        def conn_main(s=s):
            try:
                Conn(ch, s).run()
            finally:
                slots.release()
        t = threading.Thread(target=conn_main)
        t.daemon = True
        t.start()


def main():
    argv = sys.argv[1:]
    if argv and argv[0] == '--':
        argv = argv[1:]
    if not argv:
        log('usage: trialq_chanrelay.py -- COMMAND [ARG...]')
        return 2
    api_url = os.environ.get('NNI_TRIAL_COMMAND_CHANNEL', '')
    trial_id = os.environ.get('NNI_TRIAL_JOB_ID', '')
    sys_dir = os.environ.get('NNI_SYS_DIR', '')
    try:
        from urllib.parse import urlsplit
        path = urlsplit(api_url).path
        if not trial_id or not sys_dir or not path.startswith('/'):
            raise ValueError('NNI_TRIAL_COMMAND_CHANNEL, NNI_TRIAL_JOB_ID or NNI_SYS_DIR is not set')
        lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lsock.bind(('127.0.0.1', 0))
        lsock.listen(64)
        port = lsock.getsockname()[1]
    except (OSError, ValueError) as e:
        log('cannot serve the trial channel here (%s): the trial uses the api\'s channel %s, and a restart of '
            'the api fails it' % (e, without_token(api_url)))
        sys.stderr.flush()
        os.execvp(argv[0], argv)
    ch = Channel(trial_id, path, sys_dir)
    url = 'http://127.0.0.1:%d%s' % (port, path)
    chan_file = os.path.join(sys_dir, '.nni', 'channel')
    try:  # where the channel is, for people and tools; its token makes it 0600
        fd = os.open(chan_file + '.tmp', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, 'w') as f:
            f.write(url + '\n')
        os.rename(chan_file + '.tmp', chan_file)
    except OSError:
        pass
    t = threading.Thread(target=serve, args=(ch, lsock))
    t.daemon = True
    t.start()
    env = dict(os.environ)
    env['NNI_TRIAL_COMMAND_CHANNEL'] = url
    child = []

    def forward(signum, frame):
        if signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            ch.close()  # a stop reached the trial: GETs get 410
        if child:
            try:
                os.kill(child[0].pid, signum)
            except OSError:
                pass
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(s, forward)
    try:
        child.append(subprocess.Popen(argv, env=env))
    except OSError as e:
        log('cannot run %s: %s' % (argv[0], e))
        return 127
    rc = child[0].wait()
    ch.close()
    try:
        with open(chan_file) as f:  # another role's relay may have written it since
            mine = f.read().strip() == url
        if mine:
            os.unlink(chan_file)
    except OSError:
        pass
    if rc < 0:  # ended by a signal: end as it did, so the launch script sees the same status
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(-rc, signal.SIG_DFL)
        os.kill(os.getpid(), -rc)
        return 128 - rc
    return rc


if __name__ == '__main__':
    sys.exit(main())

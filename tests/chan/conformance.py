"""conformance.py SERVER URL TRIAL [--kept]: runs the trial channel's conformance cases
(tests/chan/cases.txt, its format there) against the channel at URL
(http://HOST:PORT/[prefix/]env/<token>/<trial>) of trial TRIAL, served by SERVER (api,
leader or relay: the name of its expect.SERVER lines). With --kept each case's request
is the second on its connection, after a refused command (400) that shows the trial's
token: the api reads a connection's first request through its front door (api/guard.c,
evhttp: the REST API's limits, tests/e2e/33) and the channel's protocol from then on.
Prints a line per case; exits 1 when any answer differs. Standard library only
(tests/e2e/35d, tests/sdk)."""
import json
import os
import re
import socket
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))


def load(path):
    """The cases of the file at path: a list of dicts."""
    cases, cur, pending_body = [], None, False
    with open(path, encoding='utf-8') as f:
        for line in f.read().split('\n'):
            if pending_body:
                if not line.startswith('body '):
                    raise ValueError('%s: a body line must follow req' % cur['name'])
                cur['body'] = line[5:]
                pending_body = False
                continue
            if not line.strip() or line.startswith('#'):
                continue
            word, _, rest = line.partition(' ')
            if word == 'case':
                cur = {'name': rest, 'expect': {}, 'headers': []}
                cases.append(cur)
            elif word == 'req':
                parts = rest.split(' ')
                cur['method'], cur['path'] = parts[0], parts[1]
                cur['ctype'] = parts[2] if len(parts) > 2 else None
                pending_body = cur['method'] in ('PUT', 'POST')
            elif word == 'raw':
                cur['raw'] = rest
            elif word == 'expect':
                cur['expect']['*'] = int(rest)
            elif word.startswith('expect.'):
                cur['expect'][word[7:]] = int(rest)
            elif word == 'json-type':
                cur['json_type'] = rest
            elif word in ('empty', 'error', 'closes'):
                cur[word] = True
            elif word == 'waits':
                cur['waits'] = tuple(int(x) for x in rest.split())
            elif word == 'header':
                cur['headers'].append(rest)
            else:
                raise ValueError('unknown line: %r' % line)
    return cases


def unescape(text):
    text = re.sub(r'\{pad:(\d+)\}', lambda m: 'x' * int(m.group(1)), text)
    return text.replace('\\r', '\r').replace('\\n', '\n').replace('\\\\', '\\')


def request_bytes(case, subst):
    def fill(s):
        for k, v in subst.items():
            s = s.replace('{%s}' % k, v)
        return s
    if 'raw' in case:
        return unescape(fill(case['raw'])).encode('utf-8')
    head = '%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n' % (case['method'], fill(case['path']))
    body = fill(case['body']).encode('utf-8') if 'body' in case else b''
    if case.get('ctype'):
        head += 'Content-Type: %s\r\n' % case['ctype']
    if 'body' in case:
        head += 'Content-Length: %d\r\n' % len(body)
    return (head + '\r\n').encode('ascii') + body


def read_reply(sock):
    """(status, header lines, body) of one reply (100 Continue skipped)."""
    buf = b''
    while True:
        while b'\r\n\r\n' not in buf:
            d = sock.recv(65536)
            if not d:
                raise EOFError('connection closed before a reply: %r' % buf)
            buf += d
        head, _, buf = buf.partition(b'\r\n\r\n')
        lines = head.decode('latin-1').split('\r\n')
        status = int(lines[0].split(' ')[1])
        if status != 100:
            break
    headers = lines[1:]
    n = 0
    for h in headers:
        if h.lower().startswith('content-length:'):
            n = int(h.split(':', 1)[1])
    while len(buf) < n:
        d = sock.recv(65536)
        if not d:
            break
        buf += d
    return status, headers, buf[:n]


def check(case, server, status, headers, body, ms):
    """What is wrong with the reply: a list of messages."""
    want = case['expect'].get(server, case['expect'].get('*'))
    bad = []
    if status != want:
        bad.append('status %d, not %d (%r)' % (status, want, body[:200]))
    if case.get('empty') and status == 200 and body:
        bad.append('a body: %r' % body[:200])
    if case.get('error'):
        try:
            if 'error' not in json.loads(body):
                bad.append('no "error" in %r' % body[:200])
        except ValueError:
            bad.append('not JSON: %r' % body[:200])
    if 'json_type' in case:
        try:
            if json.loads(body).get('type') != case['json_type']:
                bad.append('not a %s command: %r' % (case['json_type'], body[:200]))
        except (ValueError, AttributeError):
            bad.append('not a JSON command: %r' % body[:200])
    if 'waits' in case and not case['waits'][0] <= ms <= case['waits'][1]:
        bad.append('answered after %d ms, not %d to %d' % (ms, case['waits'][0], case['waits'][1]))
    lower = [h.lower() for h in headers]
    for h in case['headers']:
        if h.lower() not in lower:
            bad.append('no header %r in %r' % (h, headers))
    if case.get('closes') and 'connection: close' not in lower:
        bad.append('no Connection: close in %r' % headers)
    return bad


WARM_UP = (b'PUT %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n'
           b'Content-Length: 17\r\n\r\n{"type":"metric"}')


def run(server, url, trial, cases, kept=False):
    u = urllib.parse.urlsplit(url)
    wrong = re.sub(r'/env/([^/]*)/', lambda m: '/env/%s/' % ('0' * len(m.group(1))), u.path)
    subst = {'path': u.path, 'wrongpath': wrong, 'trial': trial}
    failed = 0
    for case in cases:
        s = socket.create_connection((u.hostname, u.port), timeout=10)
        try:
            if kept:
                s.sendall(WARM_UP % u.path.encode('utf-8'))
                if read_reply(s)[0] != 400:
                    raise ValueError('the request before the case was not refused with 400')
            t0 = time.monotonic()
            s.sendall(request_bytes(case, subst))
            status, headers, body = read_reply(s)
            ms = (time.monotonic() - t0) * 1000
            bad = check(case, server, status, headers, body, ms)
        except (OSError, EOFError, ValueError) as e:
            bad = ['no reply: %s' % e]
        finally:
            s.close()
        print('%s %s: %s' % (server, case['name'], '; '.join(bad) if bad else 'ok'))
        failed += bool(bad)
    return failed


def main():
    server, url, trial = sys.argv[1:4]
    cases = load(os.path.join(HERE, 'cases.txt'))
    failed = run(server, url, trial, cases, '--kept' in sys.argv[4:])
    print('%s: %d of %d cases as expected' % (server, len(cases) - failed, len(cases)))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())

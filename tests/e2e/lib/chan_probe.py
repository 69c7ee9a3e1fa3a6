"""chan_probe.py URL TRIAL DIR: puts a trial's HTTP command channel through NNI's requests
by hand, as a local trial's leader (supervise/chanserve.c, e2e/35b) and a cluster trial's
relay (sdk/chanrelay/trialq_chanrelay.py, e2e/70b) must answer them: the parameter of
DIR/parameter.cfg, a 408 after 1 s, a metric framed in DIR/.nni/metrics before its 200,
403/400/415 for refused metrics (nothing written), 404 for another path, 405 for POST;
one keep-alive connection, and a request on a new connection as NNI's SDK sends them.
The metric of sequence 7 is sent twice (the caller may check that it is stored once)."""
import http.client, json, os, sys, time, urllib.parse
url, tid, tdir = sys.argv[1:4]
u = urllib.parse.urlsplit(url)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)  # one keep-alive connection
def req(method, body=None, ctype='application/json', path=u.path):
    conn.request(method, path, body=body, headers={'Content-Type': ctype} if body is not None else {})
    r = conn.getresponse()
    return r.status, r.read()
def metric(trial, seq):
    return json.dumps({'type': 'metric', 'metric': json.dumps({'parameter_id': 0, 'trial_job_id': trial,
                       'type': 'PERIODICAL', 'sequence': seq, 'value': '0.5'})})
mfile = os.path.join(tdir, '.nni', 'metrics')
size = lambda: os.path.getsize(mfile) if os.path.exists(mfile) else 0
assert req('PUT', '{"type":"request_parameter"}') == (200, b'')
st, body = req('GET')
assert st == 200, (st, body)
cmd = json.loads(body)
assert cmd['type'] == 'parameter' and json.loads(cmd['parameter']) == json.load(open(tdir + '/parameter.cfg')), cmd
t0 = time.monotonic()
st, _ = req('GET')
ms = (time.monotonic() - t0) * 1000
assert st == 408 and 900 <= ms <= 1500, (st, ms)
n0 = size()
assert req('PUT', metric(tid, 7)) == (200, b'')
rec = open(mfile, 'rb').read()[n0:]
want = json.loads(metric(tid, 7))['metric'].encode() + b'\n'
assert rec == b'ME%06d' % len(want) + want, rec   # framed and written before the 200
assert req('PUT', metric(tid, 7))[0] == 200          # sent again: stored once (below)
n1 = size()
for body, ctype, code in [(metric('Other', 8), 'application/json', 403),
                          ('{"type":"metric",', 'application/json', 400),
                          ('{"type":"metric","metric":"{not json"}', 'application/json', 400),
                          ('{"type":"metric","metric":"{\\"type\\":\\"X\\",\\"value\\":1}"}', 'application/json', 400),
                          (metric(tid, 8), 'text/plain', 415)]:
    st, out = req('PUT', body, ctype)
    assert st == code, (body, ctype, st, out)
    assert 'error' in json.loads(out), out
assert size() == n1, 'a refused metric was written'
other = u.path.replace('/env/', '/env/0000')
assert req('PUT', metric(tid, 8), path=other)[0] == 404
assert req('POST', metric(tid, 8))[0] == 405
c2 = http.client.HTTPConnection(u.hostname, u.port, timeout=10)  # a new connection, as requests.put
c2.request('PUT', u.path, body=metric(None, 9), headers={'Content-Type': 'application/json'})
assert c2.getresponse().status == 200
print('the trial channel by hand: ok')

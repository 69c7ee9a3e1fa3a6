"""A trial speaking NNI v3's HTTP trial command channel exactly as NNI 3.0's own SDK
does (nni/runtime/command_channel/http.py, trial_command_channel/v3.py), with the
standard library only: every request on a new connection (requests.put/get, no
session), no timeout and no retry, so a connection the channel refuses raises, as
NNI's `requests.exceptions.ConnectionError` does, and the trial fails.

    GET  loop: 200 -> the command, 408 -> ask again at once, 410 -> closed
    PUT  {"type": "request_parameter"}, {"type": "metric", "metric": "<record>"}

Stricter than NNI in one place: a PUT must be answered 200 (NNI does not read the
answer), so that every metric this trial counts as sent was acknowledged. It reports
STEPS intermediate results STEP_SECONDS apart, then the final one, and writes what it
sent to acked.log in its trial dir."""
import http.client
import json
import os
import sys
import time
import urllib.parse

STEPS = int(os.environ.get('TRIAL_STEPS', '6'))
STEP_SECONDS = float(os.environ.get('TRIAL_STEP_SECONDS', '0.65'))

url = os.environ['NNI_TRIAL_COMMAND_CHANNEL']
parts = urllib.parse.urlsplit(url)
assert parts.scheme == 'http', url


def request(method, command=None):
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80)  # no timeout, as requests
    headers = {'Connection': 'keep-alive', 'Accept': '*/*'}
    body = None
    if command is not None:
        body = json.dumps(command).encode()  # requests' json=
        headers['Content-Type'] = 'application/json'
    conn.request(method, parts.path, body=body, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, data


def send(command):
    status, data = request('PUT', command)
    if status != 200:
        sys.exit('PUT %s: HTTP %d %r' % (command['type'], status, data))


def receive():
    while True:
        status, data = request('GET')
        if status == 200:
            return json.loads(data)
        if status == 408:
            continue
        if status == 410:
            return None
        raise IOError('HTTP command channel received unexpected status code %d' % status)


trial_id = os.environ['NNI_TRIAL_JOB_ID']
send({'type': 'request_parameter'})
cmd = receive()
assert cmd and cmd['type'] == 'parameter', cmd
record = json.loads(cmd['parameter'])
x = record['parameters']['x']
log = open(os.path.join(os.environ['NNI_SYS_DIR'], 'acked.log'), 'a')


def metric(type_, seq, value):
    send({'type': 'metric', 'metric': json.dumps({
        'parameter_id': record['parameter_id'], 'trial_job_id': trial_id, 'type': type_,
        'sequence': seq, 'value': json.dumps(value)})})
    log.write('%s %d %s\n' % (type_, seq, json.dumps(value)))
    log.flush()


for i in range(STEPS):
    time.sleep(STEP_SECONDS)
    metric('PERIODICAL', i, x + i)
metric('FINAL', 0, x * 2)

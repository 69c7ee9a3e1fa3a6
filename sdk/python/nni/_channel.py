"""Trial command channels: how parameters reach a trial and metrics leave it.

The channel is chosen from the environment the way NNI 3.0 chooses it:

- NNI_TRIAL_COMMAND_CHANNEL = import://module.Class  -> that class
- NNI_TRIAL_COMMAND_CHANNEL set otherwise             -> HTTP channel (v3)
- NNI_PLATFORM unset, empty or "unittest"             -> standalone (no manager)
- NNI_PLATFORM = "local" and REUSE_MODE not true      -> parameter.cfg + .nni/metrics file
- any other platform                                  -> parameter.cfg + NNISDK_MEb stdout lines

Every channel offers receive_parameter() -> parameter record dict or None, and
send_metric(type, parameter_id, trial_job_id, sequence, value).
"""

import importlib
import json
import logging
import os
import re
import sys
import time
import warnings

_log = logging.getLogger('nni')

# NNI rejects metric records of this size or more (the reader's 6-digit length field).
METRIC_LIMIT = 1000000
PARAM_POLL_SECONDS = 0.1


def encode_metric(type_, parameter_id, trial_job_id, sequence, value):
    """The metric record JSON; value is JSON-encoded a second time, as NNI does."""
    return json.dumps({
        'parameter_id': parameter_id,
        'trial_job_id': trial_job_id,
        'type': type_,
        'sequence': sequence,
        'value': json.dumps(value),
    })


class StandaloneChannel:
    """No manager: parameters are empty and metrics are only logged."""

    def __init__(self):
        if not _log.handlers and not logging.getLogger().handlers:
            handler = logging.StreamHandler(sys.stdout)
            handler.setFormatter(logging.Formatter(
                '[%(asctime)s] %(levelname)s (%(name)s) %(message)s', '%Y-%m-%d %H:%M:%S'))
            _log.addHandler(handler)
            _log.setLevel(logging.INFO)

    def receive_parameter(self):
        warnings.warn('Running trial code without a runtime (NNI_PLATFORM is not set): '
                      'get_next_parameter() returns {}', RuntimeWarning, stacklevel=3)
        return {'parameter_id': None, 'parameters': {}}

    def send_metric(self, type_, parameter_id, trial_job_id, sequence, value):
        if type_ == 'FINAL':
            _log.info('Final result: %s', value)
        else:
            _log.info('Intermediate result: %s  (Index %s)', value, sequence)


class LegacyChannel:
    """NNI's file protocol: parameters from $NNI_SYS_DIR/parameter.cfg, metrics
    appended to $NNI_SYS_DIR/.nni/metrics (or printed to stdout when to_stdout)."""

    def __init__(self, sys_dir, to_stdout):
        if not sys_dir:
            raise RuntimeError('NNI_PLATFORM is set but NNI_SYS_DIR is not: '
                               'cannot find parameter.cfg')
        self._sys_dir = sys_dir
        self._to_stdout = to_stdout
        self._fd = None
        self._received = False

    def receive_parameter(self):
        # Without multi-phase a trial gets exactly one parameter set, like NNI.
        if self._received:
            return None
        path = os.path.join(self._sys_dir, 'parameter.cfg')
        bad_reads = 0
        while True:
            try:
                with open(path, 'rb') as f:
                    text = f.read().decode('utf-8')
            except FileNotFoundError:
                text = ''
            if text.strip():
                try:
                    record = json.loads(text)
                    break
                except ValueError:
                    # The manager may still be writing it; give up after ~5 s.
                    bad_reads += 1
                    if bad_reads >= 50:
                        raise ValueError('%s: not valid JSON' % path) from None
            time.sleep(PARAM_POLL_SECONDS)
        if not isinstance(record, dict) or 'parameters' not in record:
            raise ValueError("%s: not a parameter record (no 'parameters' key)" % path)
        self._received = True
        return record

    def send_metric(self, type_, parameter_id, trial_job_id, sequence, value):
        text = encode_metric(type_, parameter_id, trial_job_id, sequence, value)
        if self._to_stdout:
            if len(text) >= METRIC_LIMIT:
                raise ValueError('metric too long (%d bytes)' % len(text))
            print("NNISDK_MEb'%s'" % text, flush=True)
            return
        data = (text + '\n').encode('utf-8')
        if len(data) >= METRIC_LIMIT:
            raise ValueError('metric too long (%d bytes)' % len(data))
        record = b'ME%06d' % len(data) + data
        if self._fd is None:
            nni_dir = os.path.join(self._sys_dir, '.nni')
            os.makedirs(nni_dir, exist_ok=True)
            self._fd = os.open(os.path.join(nni_dir, 'metrics'),
                               os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        # One write() on an O_APPEND fd: a reader sees whole records, and there is no
        # user-space buffer to flush.
        written = os.write(self._fd, record)
        if written != len(record):
            raise OSError('short write to %s/.nni/metrics (%d of %d bytes)'
                          % (self._sys_dir, written, len(record)))


def _without_token(url):
    """The channel URL for messages, which end up in trial.stderr (served by trial-file,
    shown by the web UI): its token (/env/<token>/<trial>) left out."""
    return re.sub(r'/env/[^/]*/', '/env/<token>/', url)


class HttpChannel:
    """NNI v3 HTTP trial command channel: PUT commands, GET long-poll for replies."""

    # Connection failures and 502/503/504 (an api being restarted) are retried for this
    # long; the manager's state is in its database, so a new api process carries on.
    RETRY_SECONDS = 60.0

    def __init__(self, url):
        # imported here: http.client costs ~30 ms of start-up, paid only by HTTP trials
        import http.client
        import urllib.parse
        self._http = http.client
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != 'http' or not parts.hostname:
            raise ValueError('NNI_TRIAL_COMMAND_CHANNEL must be an http:// URL, got %r' % _without_token(url))
        self._url = url
        self._shown = _without_token(url)
        self._host = parts.hostname
        self._port = parts.port or 80
        self._path = (parts.path or '/') + ('?' + parts.query if parts.query else '')
        self._conn = None

    def _request(self, method, body=None):
        headers = {}
        if body is not None:
            headers['Content-Type'] = 'application/json'
        deadline = time.monotonic() + self.RETRY_SECONDS
        delay = 0.0
        while True:
            try:
                if self._conn is None:
                    self._conn = self._http.HTTPConnection(self._host, self._port, timeout=60)
                self._conn.request(method, self._path, body=body, headers=headers)
                resp = self._conn.getresponse()
                data = resp.read()
                if resp.will_close:
                    self._close()
                if resp.status not in (502, 503, 504):
                    return resp.status, data
                error = 'HTTP %d' % resp.status
            except (OSError, self._http.HTTPException) as e:
                self._close()
                error = str(e) or type(e).__name__
            if time.monotonic() + delay > deadline:
                raise OSError('trial command channel %s: %s failed: %s'
                              % (self._shown, method, error))
            # First retry at once (a keep-alive connection the server closed), then back off.
            time.sleep(delay)
            delay = min(max(delay * 2, 0.1), 2.0)

    def _close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def send(self, command):
        status, data = self._request('PUT', json.dumps(command).encode('utf-8'))
        if status == 410:
            _log.warning('Trial command channel is closed; %s not delivered', command.get('type'))
        elif status // 100 != 2:
            raise OSError('trial command channel %s: PUT returned HTTP %d: %s'
                          % (self._shown, status, data[:200].decode('utf-8', 'replace')))

    def receive(self):
        """Next command from the manager, or None once the channel is closed."""
        while True:
            status, data = self._request('GET')
            if status == 200:
                return json.loads(data.decode('utf-8'))
            if status == 408:        # long-poll timed out: ask again at once
                continue
            if status == 410:
                return None
            raise OSError('trial command channel %s: GET returned HTTP %d: %s'
                          % (self._shown, status, data[:200].decode('utf-8', 'replace')))

    def receive_parameter(self):
        self.send({'type': 'request_parameter'})
        command = self.receive()
        if command is None:
            _log.error('Trial command channel is closed')
            return None
        if command.get('type') != 'parameter':
            raise ValueError('trial command channel: expected a parameter command, got %r'
                             % command.get('type'))
        return json.loads(command['parameter'])

    def send_metric(self, type_, parameter_id, trial_job_id, sequence, value):
        self.send({'type': 'metric',
                   'metric': encode_metric(type_, parameter_id, trial_job_id, sequence, value)})


def from_environment(env=os.environ):
    """Create the channel that NNI would use in this environment."""
    url = env.get('NNI_TRIAL_COMMAND_CHANNEL', '')
    if url.startswith('import://'):
        module_name, _, class_name = url[len('import://'):].rpartition('.')
        return getattr(importlib.import_module(module_name), class_name)()
    if url:
        return HttpChannel(url)
    platform = env.get('NNI_PLATFORM', '')
    if platform in ('', 'unittest'):
        return StandaloneChannel()
    reuse = env.get('REUSE_MODE', '') in ('true', 'True')
    return LegacyChannel(env.get('NNI_SYS_DIR', ''), to_stdout=platform != 'local' or reuse)

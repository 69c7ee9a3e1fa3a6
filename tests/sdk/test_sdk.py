"""Tests of the Python trial SDK (sdk/python/nni) and the quickstart example trials.

Every trial runs in a subprocess with the environment trialq gives it, and what it
sends is checked on the wire: metrics-file bytes, stdout lines, HTTP requests.
Standard library only; run with /usr/bin/python3.
"""

import ast
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SDK_DIR = os.path.join(ROOT, 'sdk', 'python')
QUICKSTART = os.path.join(ROOT, 'examples', 'quickstart')

RECORD = {'parameter_id': 5, 'parameter_source': 'algorithm',
          'parameters': {'lr': 0.01, 'hidden': 256, 'act': 'relu'}, 'parameter_index': 0}


def trial_env(**extra):
    """A clean trial environment: no NNI variables from outside, our SDK on the path."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith('NNI_') and k not in ('MULTI_PHASE', 'REUSE_MODE')}
    env['PYTHONPATH'] = SDK_DIR
    env['PYTHONDONTWRITEBYTECODE'] = '1'
    env.update(extra)
    return env


def run_python(code, env, cwd=None, timeout=30):
    return subprocess.run([sys.executable, '-c', textwrap.dedent(code)], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def parse_metrics(data):
    """Split a .nni/metrics file into metric dicts, insisting on exact framing."""
    out = []
    i = 0
    while i < len(data):
        assert data[i:i + 2] == b'ME', 'bad magic at byte %d: %r' % (i, data[i:i + 8])
        digits = data[i + 2:i + 8]
        assert re.fullmatch(rb'[0-9]{6}', digits), 'bad length field %r' % digits
        n = int(digits)
        payload = data[i + 8:i + 8 + n]
        assert len(payload) == n, 'truncated record at byte %d' % i
        assert payload.endswith(b'\n') and b'\n' not in payload[:-1], payload
        out.append(json.loads(payload[:-1].decode('utf-8')))
        i += 8 + n
    return out


def framed(metric_json):
    data = (metric_json + '\n').encode('utf-8')
    return b'ME%06d' % len(data) + data


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='trialq-sdk-')
        self.addCleanup(shutil.rmtree, self.dir)

    def write_params(self, record=RECORD, text=None):
        with open(os.path.join(self.dir, 'parameter.cfg'), 'w') as f:
            f.write(json.dumps(record) if text is None else text)

    def metrics_bytes(self):
        path = os.path.join(self.dir, '.nni', 'metrics')
        with open(path, 'rb') as f:
            return f.read()

    def local_env(self, **extra):
        return trial_env(NNI_PLATFORM='local', NNI_SYS_DIR=self.dir, NNI_OUTPUT_DIR=self.dir,
                         NNI_EXP_ID='x1y2z3w4', NNI_TRIAL_JOB_ID='Ab3dE', NNI_TRIAL_SEQ_ID='7',
                         **extra)

    def check(self, proc):
        self.assertEqual(proc.returncode, 0, 'trial failed:\n' + proc.stdout + proc.stderr)
        return proc


class FileChannelTest(TempDirTest):
    def test_end_to_end_bytes(self):
        self.write_params()
        proc = self.check(run_python('''
            import json, nni, nni.trial
            class Scalar:                      # numpy-like: only __float__
                def __float__(self): return 0.25
            p = nni.get_next_parameter()
            print(json.dumps(p, sort_keys=True))
            print(nni.get_current_parameter('lr'), nni.trial.get_current_parameter() is p)
            print(nni.get_experiment_id(), nni.get_trial_id(), nni.get_sequence_id())
            nni.report_intermediate_result(0.5)
            nni.trial.report_intermediate_result(2)
            nni.report_intermediate_result(Scalar())
            nni.report_final_result({'default': 0.9, 'acc': 0.8})
            print(nni.__file__)
        ''', self.local_env()))
        lines = proc.stdout.splitlines()
        self.assertEqual(json.loads(lines[0]), RECORD['parameters'])
        self.assertEqual(lines[1], '0.01 True')
        self.assertEqual(lines[2], 'x1y2z3w4 Ab3dE 7')
        self.assertTrue(lines[3].startswith(SDK_DIR), 'imported another nni: ' + lines[3])

        head = '{"parameter_id": 5, "trial_job_id": "Ab3dE", '
        expected = b''.join([
            framed(head + '"type": "PERIODICAL", "sequence": 0, "value": "0.5"}'),
            framed(head + '"type": "PERIODICAL", "sequence": 1, "value": "2"}'),
            framed(head + '"type": "PERIODICAL", "sequence": 2, "value": "0.25"}'),
            framed(head + '"type": "FINAL", "sequence": 0, '
                   '"value": "{\\"default\\": 0.9, \\"acc\\": 0.8}"}'),
        ])
        self.assertEqual(self.metrics_bytes(), expected)
        metrics = parse_metrics(self.metrics_bytes())
        self.assertEqual(json.loads(metrics[3]['value']), {'default': 0.9, 'acc': 0.8})

    def test_waits_for_parameter_cfg(self):
        # An empty file counts as not written yet; the trial must wait for content.
        open(os.path.join(self.dir, 'parameter.cfg'), 'w').close()
        proc = subprocess.Popen(
            [sys.executable, '-c', 'import nni, json; print(json.dumps(nni.get_next_parameter()))'],
            env=self.local_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.4)
        self.assertIsNone(proc.poll(), 'trial did not wait for parameter.cfg')
        written = time.monotonic()
        self.write_params()
        out, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(json.loads(out), RECORD['parameters'])
        self.assertLess(time.monotonic() - written, 2.0)

    def test_pretty_printed_record_with_null_id(self):
        record = dict(RECORD, parameter_id=None, parameter_source='customized')
        self.write_params(text=json.dumps(record, indent=2))
        self.check(run_python('''
            import nni
            nni.get_next_parameter()
            nni.report_final_result(1)
        ''', self.local_env()))
        [m] = parse_metrics(self.metrics_bytes())
        self.assertIsNone(m['parameter_id'])
        self.assertEqual((m['type'], m['sequence'], m['value']), ('FINAL', 0, '1'))

    def test_nan_infinity_and_unicode(self):
        self.write_params()
        self.check(run_python('''
            import nni
            nni.get_next_parameter()
            nni.report_intermediate_result(float('inf'))
            nni.report_intermediate_result({'default': -float('inf'), 'note': 'caf\u00e9 \u2713'})
            nni.report_final_result(float('nan'))
        ''', self.local_env()))
        metrics = parse_metrics(self.metrics_bytes())
        self.assertEqual([m['value'] for m in metrics][0], 'Infinity')
        self.assertEqual(json.loads(metrics[1]['value'])['note'], 'caf\u00e9 \u2713')
        self.assertIn('-Infinity', metrics[1]['value'])
        self.assertEqual(metrics[2]['value'], 'NaN')

    def test_second_request_returns_none(self):
        self.write_params()
        proc = self.check(run_python('''
            import nni
            nni.get_next_parameter()
            print(nni.get_next_parameter())
        ''', self.local_env()))
        self.assertEqual(proc.stdout.strip(), 'None')

    def test_report_before_get_next_parameter_fails(self):
        proc = run_python('import nni; nni.report_final_result(0.5)', self.local_env())
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn('get_next_parameter() needs to be called before report_final_result',
                      proc.stderr)

    def test_bad_metrics_are_rejected(self):
        self.write_params()
        proc = self.check(run_python('''
            import nni
            nni.get_next_parameter()
            for bad in ('0.5', {'acc': 0.5}, {'default': 'high'}, [0.5], object()):
                try:
                    nni.report_final_result(bad)
                except TypeError as e:
                    print('TypeError', e)
        ''', self.local_env()))
        self.assertEqual(proc.stdout.count('TypeError report_final_result:'), 5, proc.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.dir, '.nni', 'metrics')))

    def test_concurrent_writers_keep_records_whole(self):
        # Two processes appending to one metrics file (e.g. a restarted trial): records
        # must never interleave.
        self.write_params()
        code = '''
            import nni
            nni.get_next_parameter()
            for i in range(300):
                nni.report_intermediate_result({'default': i, 'pad': 'x' * 300})
        '''
        procs = [subprocess.Popen([sys.executable, '-c', textwrap.dedent(code)],
                                  env=self.local_env()) for _ in range(2)]
        for p in procs:
            self.assertEqual(p.wait(timeout=60), 0)
        metrics = parse_metrics(self.metrics_bytes())
        self.assertEqual(len(metrics), 600)
        self.assertEqual(sorted(m['sequence'] for m in metrics), sorted(list(range(300)) * 2))


class StdoutChannelTest(TempDirTest):
    LINE = re.compile(r"^NNISDK_MEb'(?P<metrics>.*)'$")

    def run_trial(self, env):
        self.write_params()
        proc = self.check(run_python('''
            import nni
            nni.get_next_parameter()
            print('hello from the trial')
            nni.report_intermediate_result(0.5)
            nni.report_final_result({'default': 0.75})
        ''', env))
        metrics, other = [], []
        for line in proc.stdout.splitlines():
            m = self.LINE.match(line)
            if m:
                metrics.append(json.loads(m.group('metrics')))
            else:
                other.append(line)
        self.assertEqual(other, ['hello from the trial'])
        self.assertFalse(os.path.exists(os.path.join(self.dir, '.nni', 'metrics')))
        return metrics

    def test_remote_platform_prints_metrics(self):
        env = self.local_env()
        env['NNI_PLATFORM'] = 'remote'
        metrics = self.run_trial(env)
        self.assertEqual(metrics, [
            {'parameter_id': 5, 'trial_job_id': 'Ab3dE', 'type': 'PERIODICAL', 'sequence': 0,
             'value': '0.5'},
            {'parameter_id': 5, 'trial_job_id': 'Ab3dE', 'type': 'FINAL', 'sequence': 0,
             'value': '{"default": 0.75}'},
        ])

    def test_reuse_mode_prints_metrics(self):
        metrics = self.run_trial(self.local_env(REUSE_MODE='true'))
        self.assertEqual([m['type'] for m in metrics], ['PERIODICAL', 'FINAL'])


class TrialLogTest(TempDirTest):
    """trial.log as NNI's SDK writes it: the nni logger's records and, on the local
    platform, every printed line as "[time] PRINT line"; prints still reach stdout."""
    CODE = '''
        import logging, sys
        import nni
        nni.get_next_parameter()
        print('hello')
        print('two\\nlines', end='')
        sys.stdout.write(' joined\\n')
        logging.getLogger('nni').info('a record')
        logging.getLogger('nni').debug('not at INFO')
        print('unfinished', end='')
        nni.report_final_result(0.5)
    '''
    STAMP = r'\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] '

    def trial_log(self):
        with open(os.path.join(self.dir, 'trial.log'), encoding='utf-8') as f:
            return f.read().splitlines()

    def test_local_prints_go_to_trial_log_and_stdout(self):
        self.write_params()
        proc = self.check(run_python(self.CODE, self.local_env()))
        self.assertEqual(proc.stdout, 'hello\ntwo\nlines joined\nunfinished')
        log = self.trial_log()
        self.assertEqual(len(log), 5, log)
        for line, rest in zip(log, ['PRINT hello', 'PRINT two', 'PRINT lines joined',
                                    r'INFO \(nni/MainThread\) a record', 'PRINT unfinished']):
            self.assertRegex(line, '^' + self.STAMP + rest + '$')
        # the final metric still went through the metrics file
        self.assertEqual([m['type'] for m in parse_metrics(self.metrics_bytes())], ['FINAL'])

    def test_appends_across_runs_and_keeps_stdout_usable(self):
        self.write_params()
        code = '''
            import sys, subprocess
            import nni
            print(sys.stdout.encoding, sys.stdout.fileno() == 1)
            sys.stdout.flush()
            subprocess.run(['echo', 'from a child'], stdout=sys.stdout, check=True)
        '''
        for _ in range(2):
            proc = self.check(run_python(code, self.local_env()))
            self.assertEqual(proc.stdout.splitlines(), ['utf-8 True', 'from a child'])
        # a child writing to the file descriptor is not a print of this trial
        self.assertEqual([line.split('] ', 1)[1] for line in self.trial_log()],
                         ['PRINT utf-8 True'] * 2)

    def test_other_platforms_log_records_only(self):
        self.write_params()
        env = self.local_env()
        env['NNI_PLATFORM'] = 'remote'
        proc = self.check(run_python(self.CODE, env))
        self.assertIn('hello', proc.stdout)
        log = self.trial_log()
        self.assertEqual(len(log), 1, log)
        self.assertRegex(log[0], r'INFO \(nni/MainThread\) a record$')

    def test_no_trial_log_without_manager_or_in_reuse_mode(self):
        self.write_params()
        for env in (trial_env(NNI_OUTPUT_DIR=self.dir), self.local_env(REUSE_MODE='true')):
            self.check(run_python('import nni\nprint("x")', env))
            self.assertFalse(os.path.exists(os.path.join(self.dir, 'trial.log')))


class UtilsTest(unittest.TestCase):
    """nni.utils.merge_parameter, as NNI's examples use it over argparse defaults."""
    def setUp(self):
        sys.path.insert(0, SDK_DIR)
        self.addCleanup(sys.path.remove, SDK_DIR)
        import nni.utils
        self.utils = nni.utils

    def test_merge_into_namespace_and_dict(self):
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument('--lr', type=float, default=0.01)
        parser.add_argument('--hidden', type=int, default=512)
        parser.add_argument('--act', default='relu')
        parser.add_argument('--batch_num', type=int, default=None)
        args = parser.parse_args([])
        merged = self.utils.merge_parameter(args, {'lr': 1, 'hidden': 64, 'act': 'tanh', 'batch_num': 3})
        self.assertIs(merged, args)
        self.assertEqual(vars(args), {'lr': 1.0, 'hidden': 64, 'act': 'tanh', 'batch_num': 3})
        self.assertIsInstance(args.lr, float)      # an int where a float was becomes a float
        d = {'lr': 0.5, 'opt': None}
        self.assertIs(self.utils.merge_parameter(d, {'opt': 'adam'}), d)
        self.assertEqual(d, {'lr': 0.5, 'opt': 'adam'})
        self.assertIs(self.utils.merge_parameter(d, None), d)

    def test_unknown_key_and_wrong_type_are_refused(self):
        with self.assertRaisesRegex(ValueError, "Key 'nope' not found in base parameters"):
            self.utils.merge_parameter({'lr': 0.1}, {'nope': 1})
        with self.assertRaisesRegex(ValueError, 'Expected "hidden" .* type int, but found float'):
            self.utils.merge_parameter({'hidden': 5}, {'hidden': 0.5})
        with self.assertRaisesRegex(ValueError, 'type float, but found str'):
            self.utils.merge_parameter(type('A', (), {'lr': 0.1})(), {'lr': '0.2'})

    def test_extract_scalar(self):
        self.assertEqual(self.utils.extract_scalar_reward({'default': 0.5, 'loss': 2}), 0.5)
        self.assertEqual(self.utils.extract_scalar_history([1, {'default': 2}]), [1, 2])
        with self.assertRaises(RuntimeError):
            self.utils.extract_scalar_reward({'loss': 2})


class StandaloneTest(unittest.TestCase):
    CODE = '''
        import nni
        print(repr(nni.get_next_parameter()))
        print(nni.get_experiment_id(), nni.get_trial_id(), nni.get_sequence_id())
        nni.report_intermediate_result(0.5)
        nni.report_final_result(0.9)
    '''

    def test_without_platform(self):
        for extra in ({}, {'NNI_PLATFORM': 'unittest'}):
            with self.subTest(env=extra):
                proc = run_python(self.CODE, trial_env(**extra))
                self.assertEqual(proc.returncode, 0, proc.stderr)
                lines = proc.stdout.splitlines()
                self.assertEqual(lines[0], '{}')
                self.assertEqual(lines[1], 'STANDALONE STANDALONE 0')
                self.assertRegex(lines[2], r'INFO \(nni\) Intermediate result: 0\.5  \(Index 0\)$')
                self.assertRegex(lines[3], r'INFO \(nni\) Final result: 0\.9$')
                self.assertIn('RuntimeWarning', proc.stderr)


class ImportChannelTest(TempDirTest):
    def test_import_url_selects_class(self):
        with open(os.path.join(self.dir, 'mychannel.py'), 'w') as f:
            f.write(textwrap.dedent('''
                class Channel:
                    def receive_parameter(self):
                        return {'parameter_id': 9, 'parameters': {'x': 1}}
                    def send_metric(self, type_, parameter_id, trial_job_id, sequence, value):
                        print('sent', type_, parameter_id, trial_job_id, sequence, value)
            '''))
        env = trial_env(NNI_PLATFORM='local', NNI_TRIAL_JOB_ID='Ab3dE',
                        NNI_TRIAL_COMMAND_CHANNEL='import://mychannel.Channel')
        env['PYTHONPATH'] = SDK_DIR + os.pathsep + self.dir
        proc = self.check(run_python('''
            import nni
            print(nni.get_next_parameter())
            nni.report_final_result(0.5)
        ''', env))
        self.assertEqual(proc.stdout.splitlines(), ["{'x': 1}", 'sent FINAL 9 Ab3dE 0 0.5'])


class ChannelServer(http.server.ThreadingHTTPServer):
    """The manager side of NNI's v3 HTTP trial command channel, for one trial."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port=0, idle=0.2, delay=0.5, closed=False):
        super().__init__(('127.0.0.1', port), ChannelHandler)
        self.idle = idle            # long-poll time before 408 (NNI: 1 s)
        self.delay = delay          # time from request_parameter to the parameter
        self.closed = closed        # answer 410 as after shutdown
        self.cond = threading.Condition()
        self.queue = []
        self.requests = []          # (method, path, content type, body, client port, status)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return 'http://127.0.0.1:%d/env/envA/Ab3dE' % self.server_address[1]

    def push(self, command):
        with self.cond:
            self.queue.append(command)
            self.cond.notify_all()

    def stop(self):
        self.shutdown()
        self.server_close()


class ChannelHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'   # keep-alive, like the manager

    def log_message(self, *args):
        pass

    def reply(self, status, body=b''):
        self.send_response(status)
        self.send_header('Content-Length', str(len(body)))
        if body:
            self.send_header('Content-Type', 'application/json')
        self.end_headers()
        self.wfile.write(body)
        return status

    def record(self, body, status):
        self.server.requests.append((self.command, self.path, self.headers.get('Content-Type'),
                                     body, self.client_address[1], status))

    def do_PUT(self):
        body = self.rfile.read(int(self.headers.get('Content-Length', 0)))
        if self.path != '/env/envA/Ab3dE':
            return self.record(body, self.reply(404))
        if self.server.closed:
            return self.record(body, self.reply(410))
        command = json.loads(body)
        if command['type'] == 'request_parameter':
            record = json.dumps(RECORD)
            threading.Timer(self.server.delay, self.server.push,
                            [{'type': 'parameter', 'parameter': record}]).start()
        self.record(body, self.reply(200))

    def do_GET(self):
        srv = self.server
        if srv.closed:
            return self.record(None, self.reply(410))
        with srv.cond:
            srv.cond.wait_for(lambda: srv.queue, timeout=srv.idle)
            command = srv.queue.pop(0) if srv.queue else None
        if command is None:
            return self.record(None, self.reply(408))
        self.record(None, self.reply(200, json.dumps(command).encode()))


class HttpChannelTest(unittest.TestCase):
    TRIAL = '''
        import nni
        print(repr(nni.get_next_parameter()))
        nni.report_intermediate_result(0.5)
        nni.report_final_result({'default': 0.9})
    '''

    def env(self, url):
        return trial_env(NNI_PLATFORM='local', NNI_EXP_ID='x1y2z3w4', NNI_TRIAL_JOB_ID='Ab3dE',
                         NNI_TRIAL_SEQ_ID='0', NNI_SYS_DIR='/nonexistent',
                         NNI_TRIAL_COMMAND_CHANNEL=url)

    def start_server(self, **kw):
        srv = ChannelServer(**kw)
        self.addCleanup(srv.stop)
        return srv

    def test_parameter_and_metrics(self):
        srv = self.start_server()
        proc = run_python(self.TRIAL, self.env(srv.url))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(ast.literal_eval(proc.stdout.strip()), RECORD['parameters'])

        reqs = srv.requests
        self.assertEqual([(r[0], r[5]) for r in reqs[:3]], [('PUT', 200), ('GET', 408), ('GET', 408)])
        self.assertEqual(json.loads(reqs[0][3]), {'type': 'request_parameter'})
        gets = [r for r in reqs if r[0] == 'GET']
        self.assertEqual([r[5] for r in gets][-1], 200)
        self.assertTrue(all(r[5] == 408 for r in gets[:-1]))
        puts = [r for r in reqs if r[0] == 'PUT']
        self.assertEqual(len(puts), 3)
        for r in puts:
            self.assertEqual(r[2], 'application/json')
            self.assertEqual(r[1], '/env/envA/Ab3dE')
        metrics = [json.loads(json.loads(r[3])['metric']) for r in puts[1:]]
        self.assertEqual([json.loads(r[3])['type'] for r in puts[1:]], ['metric', 'metric'])
        self.assertEqual(metrics, [
            {'parameter_id': 5, 'trial_job_id': 'Ab3dE', 'type': 'PERIODICAL', 'sequence': 0,
             'value': '0.5'},
            {'parameter_id': 5, 'trial_job_id': 'Ab3dE', 'type': 'FINAL', 'sequence': 0,
             'value': '{"default": 0.9}'},
        ])
        # One keep-alive connection for the whole conversation.
        self.assertEqual(len({r[4] for r in reqs}), 1, reqs)

    def test_closed_channel(self):
        srv = self.start_server(closed=True)
        proc = run_python('import nni; print(nni.get_next_parameter())', self.env(srv.url))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.strip(), 'None')
        self.assertIn('closed', proc.stderr)

    def test_waits_for_server_to_come_back(self):
        # The api is restarted under the trial: the trial retries instead of failing.
        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            port = s.getsockname()[1]
        url = 'http://127.0.0.1:%d/env/envA/Ab3dE' % port
        proc = subprocess.Popen([sys.executable, '-c', textwrap.dedent(self.TRIAL)],
                                env=self.env(url), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(0.7)
        self.assertIsNone(proc.poll(), 'trial gave up while the server was down')
        srv = self.start_server(port=port)
        out, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(ast.literal_eval(out.strip()), RECORD['parameters'])
        self.assertEqual(sum(1 for r in srv.requests if r[0] == 'PUT'), 3)

    def test_rejects_non_http_url(self):
        proc = run_python('import nni; nni.get_next_parameter()', self.env('https://x/env/a/b'))
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn('must be an http:// URL', proc.stderr)


class QuickstartTest(TempDirTest):
    def trial_defaults(self):
        with open(os.path.join(QUICKSTART, 'trial.py')) as f:
            tree = ast.parse(f.read())
        for node in tree.body:
            if isinstance(node, ast.Assign) and node.targets[0].id == 'DEFAULTS':
                return ast.literal_eval(node.value)
        self.fail('trial.py has no DEFAULTS')

    def test_search_space_matches_trial(self):
        with open(os.path.join(QUICKSTART, 'search_space.json')) as f:
            space = json.load(f)
        self.assertEqual(set(space), set(self.trial_defaults()))
        for spec in space.values():
            self.assertIn(spec['_type'], ('loguniform', 'uniform', 'choice', 'randint'))

    def test_config(self):
        try:
            import yaml
        except ImportError:
            self.skipTest('python3-yaml is not installed')
        with open(os.path.join(QUICKSTART, 'config.yml')) as f:
            config = yaml.safe_load(f)
        self.assertTrue(os.path.exists(os.path.join(QUICKSTART, config['searchSpaceFile'])))
        self.assertEqual(config['trialCommand'], 'python3 trial.py')
        self.assertEqual(config['trainingService'], {'platform': 'local'})
        self.assertEqual(config['tuner']['name'], 'Random')
        self.assertEqual((config['trialConcurrency'], config['maxTrialNumber']), (4, 24))

    def test_trial_py(self):
        params = {'lr': 0.003, 'momentum': 0.85, 'hidden': 512, 'batch': 32}
        self.write_params(dict(RECORD, parameters=params))
        start = time.monotonic()
        proc = subprocess.run([sys.executable, 'trial.py'], cwd=QUICKSTART, env=self.local_env(),
                              capture_output=True, text=True, timeout=30)
        elapsed = time.monotonic() - start
        self.check(proc)
        self.assertLess(elapsed, 1.0)
        metrics = parse_metrics(self.metrics_bytes())
        self.assertEqual([(m['type'], m['sequence']) for m in metrics],
                         [('PERIODICAL', i) for i in range(5)] + [('FINAL', 0)])
        values = [float(m['value']) for m in metrics]
        self.assertTrue(all(0 < v < 1 for v in values), values)
        self.assertEqual(values[-1], values[-2])
        self.assertLess(values[0], values[-1])
        # Deterministic: the same parameters give the same numbers.
        os.remove(os.path.join(self.dir, '.nni', 'metrics'))
        self.check(subprocess.run([sys.executable, 'trial.py'], cwd=QUICKSTART,
                                  env=self.local_env(), capture_output=True, text=True,
                                  timeout=30))
        self.assertEqual([float(m['value']) for m in parse_metrics(self.metrics_bytes())], values)

    def test_trial_py_standalone(self):
        proc = self.check(subprocess.run([sys.executable, 'trial.py'], cwd=QUICKSTART,
                                         env=trial_env(), capture_output=True, text=True,
                                         timeout=30))
        self.assertIn('Final result: 0.', proc.stdout)

    def run_sh(self, shell, **extra):
        return self.check(subprocess.run([shell, os.path.join(QUICKSTART, 'trial.sh')],
                                         env=self.local_env(**extra), cwd=self.dir,
                                         capture_output=True, text=True, timeout=30))

    def test_trial_sh_framing(self):
        shells = [s for s in ('/bin/sh', '/bin/dash', '/bin/bash') if os.path.exists(s)]
        cases = [
            # parameter.cfg text, expected parameter_id token, expected value
            (json.dumps(dict(RECORD, parameters={'hidden': 512, 'batch': 100})), '5', '0.764'),
            (json.dumps(dict(RECORD, parameter_id=None,
                             parameters={'lr': 0.1, 'hidden': 256, 'batch': 64}), indent=4),
             'null', '0.900'),
            (json.dumps({'parameter_id': 12, 'parameters': {'lr': 0.5}}), '12', '0.868'),
            (json.dumps(dict(RECORD, parameters={'hidden': 128, 'batch': 70}),
                        separators=(',', ':')), '5', '0.856'),
            (json.dumps({'parameter_id': 3, 'parameters': {'hidden': 64.0, 'batch': 16}}),
             '3', '0.756'),
        ]
        for shell in shells:
            for cfg, pid, value in cases:
                with self.subTest(shell=shell, cfg=cfg):
                    self.write_params(text=cfg)
                    metrics = os.path.join(self.dir, '.nni', 'metrics')
                    if os.path.exists(metrics):
                        os.remove(metrics)
                    self.run_sh(shell)
                    payload = ('{"parameter_id": %s, "trial_job_id": "Ab3dE", "type": "FINAL", '
                               '"sequence": 0, "value": "%s"}' % (pid, value))
                    self.assertEqual(self.metrics_bytes(), framed(payload))

    def test_trial_sh_appends(self):
        self.write_params()
        os.mkdir(os.path.join(self.dir, '.nni'))
        with open(os.path.join(self.dir, '.nni', 'metrics'), 'wb') as f:
            f.write(framed('{"parameter_id": 5, "trial_job_id": "Ab3dE", "type": "PERIODICAL", '
                           '"sequence": 0, "value": "0.1"}'))
        self.run_sh('/bin/sh')
        metrics = parse_metrics(self.metrics_bytes())
        self.assertEqual([m['type'] for m in metrics], ['PERIODICAL', 'FINAL'])
        self.assertEqual(float(metrics[1]['value']), 0.9)


if __name__ == '__main__':
    unittest.main()

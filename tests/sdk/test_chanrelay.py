"""The HTTP trial channel's relay of cluster trials (sdk/chanrelay/trialq_chanrelay.py)
answers the channel's conformance cases (tests/chan/cases.txt) as the api and a local
trial's leader do (tests/e2e/35d runs the same cases against those)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'chan'))
import conformance  # noqa: E402


class ChanRelayConformance(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        os.mkdir(os.path.join(self.dir, '.nni'))
        with open(os.path.join(self.dir, 'parameter.cfg'), 'w') as f:
            json.dump({'parameter_id': 0, 'parameter_source': 'algorithm', 'parameters': {'x': 1}}, f)
        env = dict(os.environ, NNI_TRIAL_COMMAND_CHANNEL='http://127.0.0.1:9/env/0123abcd/TrIaL',
                   NNI_TRIAL_JOB_ID='TrIaL', NNI_SYS_DIR=self.dir)
        self.relay = subprocess.Popen([sys.executable, os.path.join(ROOT, 'sdk', 'chanrelay', 'trialq_chanrelay.py'),
                                       '--', 'sleep', '60'], env=env)
        chan = os.path.join(self.dir, '.nni', 'channel')
        deadline = time.monotonic() + 10
        while not os.path.exists(chan) and time.monotonic() < deadline:
            time.sleep(0.05)
        with open(chan) as f:
            self.url = f.read().strip()

    def tearDown(self):
        self.relay.terminate()
        self.relay.wait()
        shutil.rmtree(self.dir)

    def test_cases(self):
        cases = conformance.load(os.path.join(ROOT, 'tests', 'chan', 'cases.txt'))
        self.assertGreater(len(cases), 20)
        self.assertEqual(conformance.run('relay', self.url, 'TrIaL', cases), 0)
        # the accepted metrics are on disk, framed as NNI's file channel frames them
        with open(os.path.join(self.dir, '.nni', 'metrics'), 'rb') as f:
            self.assertEqual(f.read().count(b'ME'), 2)


if __name__ == '__main__':
    unittest.main()

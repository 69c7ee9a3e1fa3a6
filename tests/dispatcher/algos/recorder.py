"""User classes the end-to-end tests load with codeDirectory + className. Each writes
what it receives as JSON lines to the file `out`, which the test reads."""
import json
import os

from nni import NoMoreTrialError
from nni.assessor import Assessor, AssessResult
from nni.runtime.msg_dispatcher_base import MsgDispatcherBase
from nni.tuner import Tuner


def _log(out, **record):
    with open(out, 'a') as f:
        f.write(json.dumps(record, sort_keys=True) + '\n')


class RecordingTuner(Tuner):
    """Proposes q = the choice values of the search space in order (then again, doubled,
    so the sequence is deterministic), and records every call."""

    def __init__(self, out, prefix='w'):
        self.out = out
        self.prefix = prefix
        self.values = []
        self.pid = os.getpid()
        _log(out, event='start', mode=os.environ.get('NNI_MODE'), pid=self.pid,
             channel=os.environ.get('NNI_TUNER_COMMAND_CHANNEL', 'pipe'),
             cuda=os.environ.get('CUDA_VISIBLE_DEVICES'), cwd=os.getcwd())

    def update_search_space(self, search_space):
        self.values = list(search_space['q']['_value'])
        _log(self.out, event='search_space', space=search_space, pid=self.pid)

    def generate_parameters(self, parameter_id, **kwargs):
        k = len(self.values)
        q = self.values[parameter_id % k] * (1 + parameter_id // k)
        params = {'q': q, 'tag': '%s%d' % (self.prefix, parameter_id)}
        _log(self.out, event='generate', parameter_id=parameter_id, parameters=params, pid=self.pid)
        return params

    def receive_trial_result(self, parameter_id, parameters, value, **kwargs):
        _log(self.out, event='result', parameter_id=parameter_id, parameters=parameters, value=value,
             trial_job_id=kwargs.get('trial_job_id'), pid=self.pid)

    def trial_end(self, parameter_id, success, **kwargs):
        _log(self.out, event='trial_end', parameter_id=parameter_id, success=success, pid=self.pid)

    def import_data(self, data):
        _log(self.out, event='import', data=data, pid=self.pid)

    def load_checkpoint(self):
        _log(self.out, event='load_checkpoint', pid=self.pid)


class LimitedTuner(RecordingTuner):
    """Gives `limit` trials, then NoMoreTrialError (the dispatcher answers NO)."""

    def __init__(self, out, limit):
        super().__init__(out)
        self.limit = limit

    def generate_parameters(self, parameter_id, **kwargs):
        if parameter_id >= self.limit:
            raise NoMoreTrialError()
        return super().generate_parameters(parameter_id, **kwargs)


class RaisingTuner(RecordingTuner):
    """Raises on its second suggestion: the dispatcher reports ER with the traceback."""

    def generate_parameters(self, parameter_id, **kwargs):
        if parameter_id >= 1:
            raise ValueError('RaisingTuner exploded on purpose at parameter %d' % parameter_id)
        return super().generate_parameters(parameter_id, **kwargs)


class BrokenTuner(Tuner):
    """Cannot even be constructed: the process dies with a traceback before it connects."""

    def __init__(self, **kwargs):
        raise RuntimeError('BrokenTuner refuses to start')


class ThresholdAssessor(Assessor):
    """Bad once a trial has `start` results and its latest is below `threshold`."""

    def __init__(self, out, threshold, start=2):
        self.out = out
        self.threshold = threshold
        self.start = start

    def assess_trial(self, trial_job_id, trial_history):
        last = float(trial_history[-1])
        verdict = len(trial_history) >= self.start and last < self.threshold
        _log(self.out, event='assess', trial=trial_job_id, n=len(trial_history), bad=verdict)
        return AssessResult.Bad if verdict else AssessResult.Good

    def trial_end(self, trial_job_id, success):
        _log(self.out, event='assessor_trial_end', trial=trial_job_id, success=success)


class StringIdAdvisor(MsgDispatcherBase):
    """An advisor (its own dispatcher loop) with string parameter ids, like Hyperband's."""

    def __init__(self, out):
        super().__init__()
        self.out = out
        self.count = 0
        self.values = []

    def handle_initialize(self, data):
        self.values = list(data['q']['_value'])
        self.send('ID', '')

    def handle_request_trial_jobs(self, data):
        for _ in range(int(data)):
            pid = 'r0-%d' % self.count
            params = {'q': self.values[self.count % len(self.values)]}
            self.count += 1
            _log(self.out, event='generate', parameter_id=pid, parameters=params)
            self.send('TR', json.dumps({'parameter_id': pid, 'parameter_source': 'algorithm',
                                        'parameters': params, 'parameter_index': 0}))

    def handle_update_search_space(self, data):
        pass

    def handle_import_data(self, data):
        pass

    def handle_add_customized_trial(self, data):
        pass

    def handle_report_metric_data(self, data):
        if data['type'] == 'FINAL':
            _log(self.out, event='result', parameter_id=data['parameter_id'], value=json.loads(data['value']),
                 trial_job_id=data['trial_job_id'])

    def handle_trial_end(self, data):
        _log(self.out, event='trial_end', trial=data['trial_job_id'], event_name=data['event'],
             parameter_id=json.loads(data['hyper_params'])['parameter_id'])

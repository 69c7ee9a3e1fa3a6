"""MsgDispatcher: runs a Tuner and an optional Assessor behind NNI's commands, as
nni/runtime/msg_dispatcher.py does (one thread here: the order of commands is kept)."""
import json
import logging

from ..assessor import AssessResult
from .msg_dispatcher_base import MsgDispatcherBase

_logger = logging.getLogger('nni.dispatcher')


class MsgDispatcher(MsgDispatcherBase):
    def __init__(self, channel, tuner, assessor=None):
        super().__init__(channel)
        self.tuner = tuner
        self.assessor = assessor
        self.next_parameter_id = 0
        self.trial_params = {}
        self.customized_ids = set()
        self.history = {}
        self.ended = set()

    def load_checkpoint(self):
        self.tuner.load_checkpoint()
        if self.assessor is not None:
            self.assessor.load_checkpoint()

    def handle_initialize(self, data):
        self.tuner.update_search_space(data)
        self.send('ID', '')

    def _record(self, pid, params):
        self.trial_params[pid] = params
        return json.dumps({'parameter_id': pid, 'parameter_source': 'algorithm',
                           'parameters': params, 'parameter_index': 0})

    def handle_request_trial_jobs(self, data):
        n = int(data)
        ids = list(range(self.next_parameter_id, self.next_parameter_id + n))
        self.next_parameter_id += n
        params_list = self.tuner.generate_multiple_parameters(ids)
        for i, params in enumerate(params_list):
            self.send('TR', self._record(ids[i], params))
        if len(params_list) < n:
            self.send('NO', json.dumps({'parameter_id': None, 'parameter_source': 'algorithm',
                                        'parameters': '', 'parameter_index': 0}))

    def handle_update_search_space(self, data):
        self.tuner.update_search_space(data)

    def handle_import_data(self, data):
        for record in data:
            if isinstance(record.get('value'), str):
                record['value'] = json.loads(record['value'])
        self.tuner.import_data(data)

    def handle_add_customized_trial(self, data):
        if not isinstance(data, list):
            data = [data]
        for record in data:
            pid = record['parameter_id']
            self.trial_params[pid] = record['parameters']
            if isinstance(pid, int):
                self.next_parameter_id = max(self.next_parameter_id, pid + 1)

    def handle_report_metric_data(self, data):
        if 'value' in data:
            data['value'] = json.loads(data['value'])
        if data['type'] == 'FINAL':
            pid = data['parameter_id']
            if pid is None or pid in self.customized_ids:
                return
            if pid in self.trial_params:
                self.tuner.receive_trial_result(pid, self.trial_params[pid], data['value'],
                                                trial_job_id=data.get('trial_job_id'))
            else:
                _logger.warning('unknown parameter id %s', pid)
        elif data['type'] == 'PERIODICAL' and self.assessor is not None:
            tid = data['trial_job_id']
            if tid in self.ended:
                return
            history = self.history.setdefault(tid, {})
            history[data['sequence']] = data['value']
            ordered = []
            for seq in range(len(history)):
                if seq not in history:
                    break
                ordered.append(history[seq])
            if len(ordered) <= data['sequence']:
                return
            result = self.assessor.assess_trial(tid, ordered)
            if isinstance(result, bool):
                result = AssessResult.Good if result else AssessResult.Bad
            if result is AssessResult.Bad:
                self.send('KI', json.dumps(tid))

    def handle_trial_end(self, data):
        tid = data['trial_job_id']
        self.ended.add(tid)
        self.history.pop(tid, None)
        success = data['event'] == 'SUCCEEDED'
        if self.assessor is not None:
            self.assessor.trial_end(tid, success)
        if self.tuner is not None:
            pid = json.loads(data['hyper_params'])['parameter_id']
            self.tuner.trial_end(pid, success)

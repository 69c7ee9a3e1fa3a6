"""MsgDispatcherBase: what an advisor (Hyperband, BOHB, a customized one) subclasses. It gets
every command and answers through self.send()."""
import json
import logging

_logger = logging.getLogger('nni.dispatcher')


class MsgDispatcherBase:
    def __init__(self, channel=None):
        self.channel = channel
        self.stopping = False

    def send(self, command, content):
        self.channel.send(command, content)

    def run(self):
        while not self.stopping:
            cmd = self.channel.receive()
            if cmd is None:
                _logger.info('channel closed')
                break
            command, content = cmd
            _logger.debug('command %s', command)
            if command == 'TE':
                _logger.info('terminate')
                self.handle_terminate()
                break
            self.handle_command(command, content)

    def handle_command(self, command, content):
        handlers = {
            'IN': self.handle_initialize,
            'GE': self.handle_request_trial_jobs,
            'SS': self.handle_update_search_space,
            'FD': self.handle_import_data,
            'AD': self.handle_add_customized_trial,
            'ME': self.handle_report_metric_data,
            'EN': self.handle_trial_end,
            'PI': lambda data: None,
        }
        if command not in handlers:
            raise AssertionError('Unsupported command: %s' % command)
        data = json.loads(content) if content and command not in ('GE', 'PI') else content
        handlers[command](data)

    def handle_terminate(self):
        self.stopping = True

    def load_checkpoint(self):
        pass

    def handle_initialize(self, data):
        raise NotImplementedError

    def handle_request_trial_jobs(self, data):
        raise NotImplementedError

    def handle_update_search_space(self, data):
        raise NotImplementedError

    def handle_import_data(self, data):
        raise NotImplementedError

    def handle_add_customized_trial(self, data):
        raise NotImplementedError

    def handle_report_metric_data(self, data):
        raise NotImplementedError

    def handle_trial_end(self, data):
        raise NotImplementedError

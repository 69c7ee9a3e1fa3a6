"""python -m nni --exp_params <base64 of the experiment config>: NNI's dispatcher entry."""
import argparse
import base64
import importlib
import json
import logging
import os
import sys
import traceback

from .runtime.channel import connect
from .runtime.msg_dispatcher import MsgDispatcher
from .runtime.msg_dispatcher_base import MsgDispatcherBase
from .tuner import Tuner


class BuiltinPlaceholder(Tuner):
    """trialq runs built-in algorithms in C; the process is not asked to tune."""

    def __init__(self, name):
        self.name = name

    def update_search_space(self, search_space):
        pass

    def receive_trial_result(self, parameter_id, parameters, value, **kwargs):
        pass

    def generate_parameters(self, parameter_id, **kwargs):
        raise RuntimeError('built-in tuner %s is not run by this stand-in' % self.name)


def create(algo):
    if algo.get('className'):
        sys.path.append(algo.get('codeDirectory') or '.')
        module_name, class_name = algo['className'].rsplit('.', 1)
        cls = getattr(importlib.import_module(module_name), class_name)
        return cls(**(algo.get('classArgs') or {}))
    return BuiltinPlaceholder(algo.get('name'))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--exp_params', required=True)
    args = parser.parse_args()
    config = json.loads(base64.b64decode(args.exp_params).decode())
    log_dir = os.environ.get('NNI_LOG_DIRECTORY', '.')
    logging.basicConfig(filename=os.path.join(log_dir, 'dispatcher.log'), level=logging.INFO,
                        format='[%(asctime)s] %(levelname)s (%(name)s) %(message)s')
    if os.environ.get('SDK_PROCESS') != 'dispatcher':
        raise RuntimeError('SDK_PROCESS is not "dispatcher"')
    # as NNI: the algorithms are built before the dispatcher runs; an exception here is a
    # crash (traceback on stderr), not an ER command
    tuner = create(config.get('tuner') or config.get('advisor'))
    assessor = create(config['assessor']) if config.get('assessor') else None
    channel = connect()
    if isinstance(tuner, MsgDispatcherBase):
        dispatcher = tuner
        dispatcher.channel = channel
    else:
        dispatcher = MsgDispatcher(channel, tuner, assessor)
    if os.environ.get('NNI_MODE') == 'resume':
        dispatcher.load_checkpoint()
    try:
        dispatcher.run()
    except Exception:
        tb = traceback.format_exc()
        sys.stderr.write(tb)
        try:
            channel.send('ER', tb)
        except OSError:
            pass
        channel.close()
        sys.exit(1)
    channel.close()


if __name__ == '__main__':
    main()

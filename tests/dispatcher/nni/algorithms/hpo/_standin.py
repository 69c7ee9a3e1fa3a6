"""What every stand-in built-in tuner does: samples the search space at random (seeded
by the parameter id, so runs repeat) and logs each call under its NNI class name, so a
test can tell from dispatcher.log which class the dispatcher loaded and with what."""
import json
import logging
import random

from nni.tuner import Tuner


def _sample(spec, rng):
    kind, value = spec.get('_type', 'choice'), spec.get('_value', [])
    if kind == 'choice':
        return rng.choice(value)
    if kind == 'randint':
        return rng.randrange(value[0], value[1])
    if kind in ('uniform', 'quniform', 'loguniform', 'qloguniform'):
        return rng.uniform(value[0], value[1])
    return rng.gauss(value[0], value[1])


class StandinTuner(Tuner):
    def __init__(self, **class_args):
        self.log = logging.getLogger(type(self).__name__)
        self.space = {}
        self.log.info('stand-in %s.%s created with %s', type(self).__module__, type(self).__name__,
                      json.dumps(class_args, sort_keys=True))

    def update_search_space(self, search_space):
        self.space = search_space
        self.log.info('stand-in %s: search space %s', type(self).__name__, json.dumps(search_space))

    def generate_parameters(self, parameter_id, **kwargs):
        rng = random.Random(parameter_id)
        params = {}
        for key, spec in self.space.items():
            # a space NNI's built-ins would refuse ({"x": [1, 100]}) reaches a
            # customized tuner as written: a list is read as (low, high)
            params[key] = _sample(spec, rng) if isinstance(spec, dict) else rng.uniform(spec[0], spec[-1])
        self.log.info('stand-in %s: generate %d %s', type(self).__name__, parameter_id, json.dumps(params))
        return params

    def receive_trial_result(self, parameter_id, parameters, value, **kwargs):
        self.log.info('stand-in %s: result %d %s', type(self).__name__, parameter_id, json.dumps(value))

"""nni.utils as trials use it: merge_parameter (tuner parameters over argparse
defaults), and the scalar extraction of metrics."""

__all__ = ['merge_parameter', 'extract_scalar_reward', 'extract_scalar_history']


def _compatible(key, base, override):
    """override, as the type of base: the same type, or an int where base is a float."""
    if base is None or isinstance(override, type(base)):
        return override
    if isinstance(base, float) and isinstance(override, int) and not isinstance(override, bool):
        return float(override)
    raise ValueError('Expected "%s" in override parameters to have type %s, but found %s'
                     % (key, type(base).__name__, type(override).__name__))


def merge_parameter(base_params, override_params):
    """Updates base_params (an argparse Namespace, or any object with attributes, or a
    dict) in place with override_params (usually nni.get_next_parameter()) and returns
    it. Every key must exist in base_params, and each value must have the type of the
    value it replaces (an int may replace a float; a None default takes anything).
    override_params None changes nothing."""
    if override_params is None:
        return base_params
    is_dict = isinstance(base_params, dict)
    for key, value in override_params.items():
        if is_dict:
            if key not in base_params:
                raise ValueError("Key '%s' not found in base parameters." % key)
            base_params[key] = _compatible(key, base_params[key], value)
        else:
            if not hasattr(base_params, key):
                raise ValueError("Key '%s' not found in base parameters." % key)
            setattr(base_params, key, _compatible(key, getattr(base_params, key), value))
    return base_params


def extract_scalar_reward(value, scalar_key='default'):
    """The number of a metric: value itself, or value[scalar_key] of a dict."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if isinstance(value, dict) and isinstance(value.get(scalar_key), (int, float)) \
            and not isinstance(value.get(scalar_key), bool):
        return value[scalar_key]
    raise RuntimeError('Incorrect final result: the final result should be float/int, '
                       'or a dict which has a key named "%s" whose value is float/int.' % scalar_key)


def extract_scalar_history(trial_history, scalar_key='default'):
    """extract_scalar_reward of each intermediate result."""
    return [extract_scalar_reward(v, scalar_key) for v in trial_history]

"""A minimal, stdlib-only stand-in for NNI's dispatcher side (tests only; see README.md)."""


class NoMoreTrialError(Exception):
    """Raised by a tuner that has no more parameters."""


def extract_scalar_reward(value, scalar_key='default'):
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, dict) and isinstance(value.get(scalar_key), (int, float)):
        return value[scalar_key]
    raise RuntimeError('Incorrect final result: the final result should be float/int, '
                       'or a dict which has a key named "default" whose value is float/int.')

"""NNI's trial API: get parameters from the tuner, report metrics back."""

import os
import threading

from . import _channel

__all__ = [
    'get_next_parameter',
    'get_next_parameters',
    'get_current_parameter',
    'report_intermediate_result',
    'report_final_result',
    'get_experiment_id',
    'get_trial_id',
    'get_sequence_id',
]

# Read once at import, as NNI does.
_platform = os.environ.get('NNI_PLATFORM') or None
_trial_job_id = os.environ.get('NNI_TRIAL_JOB_ID')
_experiment_id = os.environ.get('NNI_EXP_ID') or 'STANDALONE'
_trial_id = _trial_job_id or 'STANDALONE'
_sequence_id = int(os.environ.get('NNI_TRIAL_SEQ_ID') or 0)

_lock = threading.Lock()
_chan = None
_params = None          # the parameter record of the last get_next_parameter()
_intermediate_seq = 0


def _get_channel():
    global _chan
    if _chan is None:
        _chan = _channel.from_environment()
    return _chan


def get_next_parameter():
    """Return the hyperparameters the tuner chose for this trial (a dict).

    Returns {} when run without trialq/NNI, and None when the manager has no
    parameters for this trial (channel closed, or asked a second time).
    """
    global _params
    with _lock:
        _params = _get_channel().receive_parameter()
        return None if _params is None else _params['parameters']


def get_next_parameters():
    """Alias of get_next_parameter()."""
    return get_next_parameter()


def get_current_parameter(tag=None):
    """The parameters returned by the last get_next_parameter(), or one of them by name."""
    if _params is None:
        return None
    if tag is None:
        return _params['parameters']
    return _params['parameters'][tag]


def get_experiment_id():
    """The experiment id, or 'STANDALONE'."""
    return _experiment_id


def get_trial_id():
    """The trial id (the "ID" column of the web UI), or 'STANDALONE'."""
    return _trial_id


def get_sequence_id():
    """The trial's sequence number (the "Trial No." column of the web UI)."""
    return _sequence_id


def _plain(value, where):
    """value as plain JSON data; numpy-like scalars become int or float."""
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v, where) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, where) for v in value]
    if hasattr(value, '__index__'):
        return int(value)
    if hasattr(value, '__float__'):
        return float(value)
    raise TypeError('%s: cannot report a value of type %s' % (where, type(value).__name__))


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _metric_value(metric, where):
    value = _plain(metric, where)
    if _is_number(value):
        return value
    if isinstance(value, dict) and _is_number(value.get('default')):
        return value
    raise TypeError("%s: the metric must be a number or a dict with a numeric 'default' "
                    "key, got %r" % (where, metric))


def _send(type_, sequence, metric, where):
    if _params is None and _platform is not None:
        raise RuntimeError('nni.get_next_parameter() needs to be called before ' + where)
    value = _metric_value(metric, where)
    parameter_id = _params.get('parameter_id') if _params else None
    _get_channel().send_metric(type_, parameter_id, _trial_job_id, sequence, value)


def report_intermediate_result(metric):
    """Report a per-epoch result: a number, or a dict whose 'default' is a number."""
    global _intermediate_seq
    with _lock:
        _send('PERIODICAL', _intermediate_seq, metric, 'report_intermediate_result')
        _intermediate_seq += 1


def report_final_result(metric):
    """Report the trial's final result: a number, or a dict whose 'default' is a number."""
    with _lock:
        _send('FINAL', 0, metric, 'report_final_result')


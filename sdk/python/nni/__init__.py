"""trialq's stand-in for NNI's trial SDK (the trial API only, standard library only).

    import nni
    params = nni.get_next_parameter()
    nni.report_intermediate_result(0.5)
    nni.report_final_result(0.9)
"""

from . import _trial_log, trial
from .trial import (get_current_parameter, get_experiment_id, get_next_parameter,
                    get_next_parameters, get_sequence_id, get_trial_id,
                    report_final_result, report_intermediate_result)

__version__ = '3.0'

_trial_log.init(trial._platform)

__all__ = trial.__all__ + ['trial']

"""Stand-in for NNI's nni.algorithms.hpo.smac_tuner.SMACTuner (tests only): NNI's module path and
class name; it imports smac as NNI's does, so without that library (a stand-in
of it is in tests/dispatcher/libs) the import fails."""
import smac  # noqa: F401

from ._standin import StandinTuner


class SMACTuner(StandinTuner):
    pass

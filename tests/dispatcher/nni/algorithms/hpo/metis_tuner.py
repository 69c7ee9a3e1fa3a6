"""Stand-in for NNI's nni.algorithms.hpo.metis_tuner.MetisTuner (tests only): NNI's module path and
class name; it imports sklearn as NNI's does, so without that library (a stand-in
of it is in tests/dispatcher/libs) the import fails."""
import sklearn  # noqa: F401

from ._standin import StandinTuner


class MetisTuner(StandinTuner):
    pass

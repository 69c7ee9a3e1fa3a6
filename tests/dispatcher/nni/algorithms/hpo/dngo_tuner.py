"""Stand-in for NNI's nni.algorithms.hpo.dngo_tuner.DNGOTuner (tests only): NNI's module path and
class name; it imports pybnn as NNI's does, so without that library (a stand-in
of it is in tests/dispatcher/libs) the import fails."""
import pybnn  # noqa: F401

from ._standin import StandinTuner


class DNGOTuner(StandinTuner):
    pass

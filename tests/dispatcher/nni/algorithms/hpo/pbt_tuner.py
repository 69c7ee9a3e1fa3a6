"""Stand-in for NNI's nni.algorithms.hpo.pbt_tuner.PBTTuner (tests only): NNI's module path and
class name; it needs nothing beyond nni."""
from ._standin import StandinTuner


class PBTTuner(StandinTuner):
    pass

"""Stand-in for NNI's nni.algorithms.hpo.networkmorphism_tuner.NetworkMorphismTuner (tests only): NNI's module path and
class name; it imports torch as NNI's does, so without that library (a stand-in
of it is in tests/dispatcher/libs) the import fails."""
import torch  # noqa: F401

from ._standin import StandinTuner


class NetworkMorphismTuner(StandinTuner):
    pass

"""Stand-in for NNI's nni.algorithms.hpo.ppo_tuner.PPOTuner (tests only): NNI's module path and
class name; it imports gym as NNI's does, so without that library (a stand-in
of it is in tests/dispatcher/libs) the import fails."""
import gym  # noqa: F401

from ._standin import StandinTuner


class PPOTuner(StandinTuner):
    pass

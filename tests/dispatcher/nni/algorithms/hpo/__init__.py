"""nni.algorithms.hpo: stand-ins at NNI's module paths for the built-in tuners trialq runs
as NNI's Python class (tests only)."""

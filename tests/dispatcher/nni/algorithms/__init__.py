"""nni.algorithms: NNI's algorithm packages (stand-in; see tests/dispatcher/README.md)."""

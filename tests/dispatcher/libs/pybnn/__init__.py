"""Stand-in for the library pybnn, imported by the stand-in of the NNI tuner that needs it
(tests only)."""

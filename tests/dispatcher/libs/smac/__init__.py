"""Stand-in for the library smac, imported by the stand-in of the NNI tuner that needs it
(tests only)."""

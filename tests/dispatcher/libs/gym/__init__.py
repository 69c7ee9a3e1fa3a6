"""Stand-in for the library gym, imported by the stand-in of the NNI tuner that needs it
(tests only)."""

"""A customized tuner module next to the configs (only found, not run)."""


class MyTuner:
    pass

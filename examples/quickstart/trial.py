"""Quickstart trial: a pretend training run whose accuracy depends on its parameters.

It needs nothing but `nni` and takes a few milliseconds, so an experiment of 24
trials finishes quickly. Run alone (`python3 trial.py`) it uses the defaults below.
"""

import math

import nni
from nni.utils import merge_parameter

DEFAULTS = {'lr': 0.01, 'momentum': 0.9, 'hidden': 128, 'batch': 64}
EPOCHS = 5


def quality(p):
    """How good a parameter set is, in (0, 1]; best at lr=0.01, momentum=0.9,
    hidden=256, batch=64."""
    lr_miss = (math.log10(p['lr']) + 2) ** 2            # 0 at 1e-2, 4 at 1e-4
    momentum_miss = ((p['momentum'] - 0.9) / 0.4) ** 2
    hidden_miss = abs(math.log2(p['hidden'] / 256))
    batch_miss = abs(math.log2(p['batch'] / 64))
    return math.exp(-(0.25 * lr_miss + momentum_miss + 0.15 * hidden_miss + 0.1 * batch_miss))


def train(p):
    """Yield the accuracy after each epoch: from 10 % towards a ceiling set by quality()."""
    ceiling = 0.5 + 0.48 * quality(p)
    speed = min(0.3 + 3 * p['lr'] / (1 - p['momentum']), 3.0)   # effective step size
    for epoch in range(EPOCHS):
        wiggle = 0.004 * math.sin(7 * epoch + p['hidden'])      # deterministic "noise"
        yield 0.1 + (ceiling - 0.1) * (1 - math.exp(-speed * (epoch + 1))) + wiggle


def main():
    # the tuner's choices over the defaults, as NNI's examples do (a key the defaults
    # do not have, or a value of another type, is an error)
    params = merge_parameter(dict(DEFAULTS), nni.get_next_parameter())
    print('parameters:', params)
    accuracy = 0.0
    for epoch, accuracy in enumerate(train(params)):
        accuracy = round(accuracy, 6)
        print('epoch %d: accuracy %.4f' % (epoch, accuracy))
        nni.report_intermediate_result(accuracy)
    nni.report_final_result(accuracy)


if __name__ == '__main__':
    main()

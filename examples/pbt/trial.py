"""PBT example trial: one step of population-based training of a toy model.

The PBT tuner gives every trial two directories in its parameters:
- load_checkpoint_dir: the checkpoint to start from (its own member's last one, or a
  better member's after an exploit); absent on the first generation;
- save_checkpoint_dir: where to leave the model for the next generation.

The model is a line y = w*x + b fitted by gradient descent with momentum to fixed data
(lr and momentum are the hyperparameters PBT tunes). The checkpoint is a JSON file
that carries the weights, the optimizer state, the steps trained so far and the
lineage (which trial loaded what from where), so a run can be checked afterwards.
It needs nothing but `nni`.
"""

import json
import math
import os
import random

import nni

STEPS = 8  # one PBT step: this many gradient steps per trial


def data():
    rng = random.Random(7)
    xs = [rng.uniform(-1, 1) for _ in range(64)]
    return [(x, 3.0 * x - 1.0 + rng.gauss(0, 0.1)) for x in xs]


def loss_and_grad(model, points):
    lw = gw = gb = 0.0
    for x, y in points:
        err = model['w'] * x + model['b'] - y
        lw += err * err
        gw += 2 * err * x
        gb += 2 * err
    n = len(points)
    return lw / n, gw / n, gb / n


def load(path):
    """The checkpoint in directory `path`, or a fresh model when there is none."""
    model = {'w': 0.0, 'b': 0.0, 'vw': 0.0, 'vb': 0.0, 'steps': 0, 'lineage': []}
    ckpt = os.path.join(path, 'model.json') if path else None
    if ckpt and os.path.exists(ckpt):
        with open(ckpt) as f:
            model = json.load(f)
        return model, path
    return model, None


def save(model, path):
    """Written to a temporary file and renamed, so a killed trial leaves no half file."""
    os.makedirs(path, exist_ok=True)
    tmp = os.path.join(path, 'model.json.tmp')
    with open(tmp, 'w') as f:
        json.dump(model, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(path, 'model.json'))


def main():
    params = nni.get_next_parameter() or {}
    lr = params.get('lr', 0.05)
    momentum = params.get('momentum', 0.5)
    model, loaded_from = load(params.get('load_checkpoint_dir'))
    print('parameters:', params, 'loaded from:', loaded_from, 'after', model['steps'], 'steps')
    points = data()
    loss = math.inf
    for _ in range(STEPS):
        loss, gw, gb = loss_and_grad(model, points)
        model['vw'] = momentum * model['vw'] - lr * gw
        model['vb'] = momentum * model['vb'] - lr * gb
        model['w'] += model['vw']
        model['b'] += model['vb']
        model['steps'] += 1
        nni.report_intermediate_result(loss)
    loss, _, _ = loss_and_grad(model, points)
    model['lineage'].append({'trial': os.environ.get('NNI_TRIAL_JOB_ID'), 'loaded': loaded_from,
                             'saved': params.get('save_checkpoint_dir'), 'lr': lr, 'momentum': momentum})
    if params.get('save_checkpoint_dir'):
        save(model, params['save_checkpoint_dir'])
    print('loss %.6f after %d steps' % (loss, model['steps']))
    nni.report_final_result(loss)


if __name__ == '__main__':
    main()

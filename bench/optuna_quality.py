#!/usr/bin/python3
"""optuna_quality.py: the anchor columns of bench/tuner_quality, Optuna's TPE run on the
same functions (bench/functions.json) by the same protocol.

A run proposes up to the largest budget of trials, CONC at a time, as CONC parallel
workers sharing one study do when every trial takes as long: ask() CONC trials and
sample their parameters (define-by-run, in trial order; running trials are not seen:
the samplers' default constant_liar=False), then tell() their values in trial order.
Samplers: "tpe" is TPESampler(seed=SEED) with Optuna's defaults, "tpe-mv" the same with
multivariate=True. Optuna names a nested choice's parameters "<choice>.<option>.<name>"
(its define-by-run equivalent of NNI's nested search space).

  /usr/bin/python3 bench/optuna_quality.py run FUNCTIONS_JSON RUNS_FILE [--seeds 0-19]
      [--budget 1000] [--conc 1,8,32] [--only NAME,...] [--samplers tpe,tpe-mv]
  /usr/bin/python3 bench/optuna_quality.py table RUNS_FILE [--budgets 100,300,1000]

`run` appends one line per run to RUNS_FILE ("function conc sampler seed v0 v1 ...") and
skips the runs the file already has, so a long measurement can be made in bounded
pieces. `table` prints "function budget conc sampler best last100" (medians over the
seeds, numpy.percentile's interpolation, as tuner_quality), the format of
tuner_quality --anchor. Needs Debian's python3-optuna (3.1)."""
import json
import math
import os
import sys
import warnings


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e", "trials"))
from bench_objective import branin, hartmann6, mixed5, rosenbrock4  # noqa: E402 (the e2e trial's formulas)


def nested6(p):
    o = p["opt"]
    l = math.log10(o["lr"])
    if o["_name"] == "sgd":
        v = (l + 1.5) * (l + 1.5) + 4 * (o["momentum"] - 0.9) * (o["momentum"] - 0.9)
    elif o["_name"] == "adam":
        v = 0.05 + (l + 3.2) * (l + 3.2) + 2 * (o["beta1"] - 0.9) * (o["beta1"] - 0.9)
    else:
        v = 0.3 + (l + 2.8) * (l + 2.8)
    pen = {"tanh": 0.3, "gelu": 0.1}.get(p["act"], 0.0)
    return (v + 0.1 * (p["layers"] - 4) * (p["layers"] - 4) + 0.2 * abs(math.log2(p["width"] / 64))
            + 2 * (p["dropout"] - 0.25) * (p["dropout"] - 0.25) + pen)


def drift4(p):
    m = (0.9 - 0.15 * abs(math.log10(p["lr"]) + 2.5) - 0.1 * abs(p["momentum"] - 0.9)
         + 0.02 * math.log2(p["hidden"] / 64))
    return 1 - (1 - math.exp(-10.0 / 3)) * m


NUMERIC = {"branin": lambda x: branin(x[0], x[1]), "hartmann6": hartmann6, "rosenbrock4": rosenbrock4}
MIXED = {"mixed5": mixed5, "nested6": nested6, "drift4": drift4}


def evaluate(name, p):
    if name in NUMERIC:
        return NUMERIC[name]([p["x%d" % i] for i in range(1, 7) if "x%d" % i in p])
    return MIXED[name](p)


def sample(trial, space, prefix=""):
    """NNI search space (the types functions.json uses) -> Optuna define-by-run."""
    out = {}
    for name, spec in space.items():
        t, v, key = spec["_type"], spec["_value"], prefix + name
        if t == "uniform":
            out[name] = trial.suggest_float(key, v[0], v[1])
        elif t == "loguniform":
            out[name] = trial.suggest_float(key, v[0], v[1], log=True)
        elif t == "randint":
            out[name] = trial.suggest_int(key, v[0], v[1] - 1)
        elif t == "choice" and all(isinstance(o, dict) for o in v):
            names = [o["_name"] for o in v]
            chosen = trial.suggest_categorical(key, names)
            sub = dict(v[names.index(chosen)])
            del sub["_name"]
            out[name] = dict(sample(trial, sub, "%s.%s." % (key, chosen)), _name=chosen)
        elif t == "choice":
            out[name] = v[trial.suggest_categorical(key, list(range(len(v))))]
        else:
            sys.exit("%s: type %s is not used by functions.json" % (key, t))
    return out


def one_run(name, space, sampler_name, seed, budget, conc):
    import optuna
    multivariate = sampler_name == "tpe-mv"
    sampler = optuna.samplers.TPESampler(seed=seed, multivariate=multivariate, warn_independent_sampling=False)
    study = optuna.create_study(sampler=sampler, direction="minimize")
    values = []
    while len(values) < budget:
        batch = [study.ask() for _ in range(min(conc, budget - len(values)))]
        params = [sample(t, space) for t in batch]
        for t, p in zip(batch, params):
            v = evaluate(name, p)
            study.tell(t, v)
            values.append(v)
    return values


def percentile50(v):
    s = sorted(v)
    pos = (len(s) - 1) * 0.5
    lo = int(math.floor(pos))
    return s[lo] if lo >= len(s) - 1 else s[lo] + (s[lo + 1] - s[lo]) * (pos - lo)


def parse_opts(argv, defaults):
    opts = dict(defaults)
    for i in range(0, len(argv), 2):
        if not argv[i].startswith("--") or argv[i][2:] not in opts or i + 1 >= len(argv):
            sys.exit(__doc__)
        opts[argv[i][2:]] = argv[i + 1]
    return opts


def run(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    import optuna
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore")
    functions, runs_file = argv[0], argv[1]
    o = parse_opts(argv[2:], {"seeds": "0-19", "budget": "1000", "conc": "1,8,32", "only": "",
                              "samplers": "tpe,tpe-mv"})
    lo, _, hi = o["seeds"].partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    root = json.load(open(functions))
    benches = root["benchmarks"] + root["mixed_benchmarks"]
    done = set()
    try:
        for line in open(runs_file):
            f = line.split()
            done.add((f[0], int(f[1]), f[2], int(f[3]), len(f) - 4))
    except FileNotFoundError:
        pass
    budget = int(o["budget"])
    with open(runs_file, "a") as out:
        for b in benches:
            if o["only"] and b["name"] not in o["only"].split(","):
                continue
            for cp in b["check_points"]:
                got = evaluate(b["name"], cp["x"])
                if abs(got - cp["f"]) > 1e-9 * max(1, abs(cp["f"])) + 1e-9:
                    sys.exit("%s: f = %r at a check point, functions.json says %r" % (b["name"], got, cp["f"]))
            for conc in [int(c) for c in o["conc"].split(",")]:
                for sampler in o["samplers"].split(","):
                    for seed in seeds:
                        if (b["name"], conc, sampler, seed, budget) in done:
                            continue
                        v = one_run(b["name"], b["search_space"], sampler, seed, budget, conc)
                        out.write("%s %d %s %d %s\n" % (b["name"], conc, sampler, seed, " ".join(repr(x) for x in v)))
                        out.flush()


def table(argv):
    if len(argv) < 1:
        sys.exit(__doc__)
    o = parse_opts(argv[1:], {"budgets": "100,300,1000"})
    runs = {}
    for line in open(argv[0]):
        f = line.split()
        key = (f[0], int(f[1]), f[2])
        runs.setdefault(key, {})[int(f[3])] = [float(x) for x in f[4:]]
    print("# function budget conc sampler best last100 (medians over the seeds; seeds)")
    for (name, conc, sampler), by_seed in sorted(runs.items()):
        for budget in [int(b) for b in o["budgets"].split(",")]:
            vs = [v[:budget] for v in by_seed.values() if len(v) >= budget]
            if not vs:
                continue
            best = percentile50([min(v) for v in vs])
            last = percentile50([percentile50(v[-100:]) for v in vs])
            print("%s %d %d %s %.6g %.6g %d" % (name, budget, conc, sampler, best, last, len(vs)))


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("run", "table"):
        sys.exit(__doc__)
    (run if sys.argv[1] == "run" else table)(sys.argv[2:])

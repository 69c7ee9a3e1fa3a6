# The benchmark functions of bench/objectives.h and bench/tuner_quality.c's mixed5, as an
# unchanged NNI trial: `python3 bench_objective.py NAME`. Each formula is written with
# the same operations in the same order as the C, so the value is the same double.
import math
import sys

def branin(x1, x2):
    a, b, c, r, s, t = 1, 5.1 / (4 * math.pi * math.pi), 5 / math.pi, 6, 10, 1 / (8 * math.pi)
    u = x2 - b * x1 * x1 + c * x1 - r
    return a * u * u + s * (1 - t) * math.cos(x1) + s


def hartmann6(x):
    alpha = [1.0, 1.2, 3.0, 3.2]
    A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
         [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
    P = [[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
         [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]]
    total = 0.0
    for i in range(4):
        inner = 0.0
        for j in range(6):
            dx = x[j] - 1e-4 * P[i][j]
            inner += A[i][j] * dx * dx
        total += alpha[i] * math.exp(-inner)
    return -total


def rosenbrock4(x):
    total = 0.0
    for i in range(3):
        u, v = x[i + 1] - x[i] * x[i], x[i] - 1
        total += 100 * u * u + v * v
    return total


def mixed5(p):
    pen = {"tanh": 0.5, "sigmoid": 1.0, "gelu": 0.2}.get(p["act"], 0.0)
    l = math.log10(p["lr"]) + 2.5
    return branin(p["x1"], p["x2"]) + l * l + 0.3 * (p["k"] - 5) * (p["k"] - 5) + pen


if __name__ == "__main__":  # bench/optuna_quality.py imports the formulas
    import nni

    p = nni.get_next_parameter()
    name = sys.argv[1]
    xs = [float(p["x%d" % i]) for i in range(1, 7) if "x%d" % i in p]
    value = {"branin": lambda: branin(xs[0], xs[1]), "hartmann6": lambda: hartmann6(xs),
             "rosenbrock4": lambda: rosenbrock4(xs), "mixed5": lambda: mixed5(p)}[name]()
    nni.report_final_result(value)

# A trial for Hyperband/BOHB (an unchanged NNI trial): reads TRIAL_BUDGET from its
# parameters, reports one intermediate result per unit of budget and the final one.
# The result depends on the parameters and grows with the budget; the first
# intermediate result already equals the final one, so a trial cancelled mid-run
# ranks the same as if it had finished (Hyperband ranks by the latest result).
# With a file "slow" in the working directory it pauses longer after that first
# result, so that a test can stop the experiment while the trial runs.
import os
import time

import nni

p = nni.get_next_parameter()
budget = int(p["TRIAL_BUDGET"])
score = float(p["x"]) * 10 + {"a": 0.0, "b": 2.0, "c": 1.0}[p["opt"]] + budget / 100.0
for step in range(budget):
    nni.report_intermediate_result(score)
    if step == 0:
        time.sleep(1.0 if os.path.exists("slow") else 0.2)
nni.report_final_result(score)

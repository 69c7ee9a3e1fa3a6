# A deterministic objective for tuner tests: an unchanged NNI trial (import nni).
import nni

p = nni.get_next_parameter()
x, y = float(p["x"]), float(p["y"])
lr = float(p.get("lr", 0.01))
layer = p.get("layer", {"_name": "a"})
bonus = {"a": 0.0, "b": 0.5}.get(layer.get("_name"), 1.0) + 0.01 * float(layer.get("k", 0))
loss = (x - 0.3) ** 2 + (y + 1.0) ** 2 + abs(lr - 0.01) * 10 + bonus
for step in range(3):
    nni.report_intermediate_result(loss * (3 - step))
nni.report_final_result(loss)

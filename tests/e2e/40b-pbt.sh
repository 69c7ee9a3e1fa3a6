#!/usr/bin/env bash
# PBT (tuners/pbt.c) runs examples/pbt to the end on the local platform: 4 generations
# of a population of 4. Every trial saved its checkpoint in NNI's layout
# <experiment dir>/checkpoint/<member>/<generation>; from generation 1 on, each trial
# loaded a checkpoint its previous generation saved (the example's checkpoint records
# what it loaded), the worst member the best member's, with that member's
# hyperparameters moved one step. A second run, its api killed with kill -9 twice and
# resumed, gives the same suggestions.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
cp -r "$TRIALQ_SRC/examples/pbt" "$WORK/exp"
sed -i 's|^trialCommand: python3|trialCommand: /usr/bin/python3|' "$WORK/exp/config.yml"

nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/a.out"
a=$(exp_id_of "$WORK/a.out")
wait_status "$a" DONE 240
nnictl stop "$a" > /dev/null
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$a' AND status='SUCCEEDED'")" = 16 ] || fail "not 16 SUCCEEDED"
dir_a=$(sql "SELECT exp_dir FROM experiment WHERE id='$a'")

sql -separator '|' "SELECT parameter_id, parameters, final_metric FROM trial WHERE experiment_id='$a'
                   ORDER BY parameter_id" > "$WORK/a.rows"
$PY - "$WORK/a.rows" "$dir_a" <<'PY' || fail "checkpoints"
import json, math, os, sys
rows, exp_dir = sys.argv[1], sys.argv[2]
P, G = 4, 4
trials = {}
for line in open(rows):
    pid, params, metric = line.rstrip('\n').split('|')
    trials[int(pid)] = (json.loads(params), float(metric))
assert sorted(trials) == list(range(P * G)), sorted(trials)
base = os.path.join(exp_dir, 'checkpoint')
for pid, (p, _) in trials.items():
    g, k = divmod(pid, P)
    save = os.path.join(base, str(k), str(g))
    assert p['save_checkpoint_dir'] == save, (pid, p)
    with open(os.path.join(save, 'model.json')) as f:
        model = json.load(f)
    # the checkpoint saved there is this trial's, and it went on from what it loaded
    assert model['steps'] == 8 * (g + 1), (pid, model['steps'])
    assert len(model['lineage']) == g + 1, (pid, model['lineage'])
    last = model['lineage'][-1]
    assert last['saved'] == save and last['lr'] == p['lr'], (pid, last)
    if g == 0:
        assert p['load_checkpoint_dir'] == save and last['loaded'] is None, (pid, p, last)
        continue
    assert last['loaded'] == p['load_checkpoint_dir'], (pid, last, p)
    prev = {q: trials[q] for q in range((g - 1) * P, g * P)}
    sources = [q for q, (pp, _) in prev.items() if pp['save_checkpoint_dir'] == p['load_checkpoint_dir']]
    assert len(sources) == 1, (pid, p['load_checkpoint_dir'])
    src = sources[0]
    ranked = sorted(prev, key=lambda q: (prev[q][1], q))          # minimize: best first
    if src == pid - P:
        # went on from its own checkpoint with its own hyperparameters
        assert pid - P != ranked[-1], ('the worst member kept its own', pid)
        assert (p['lr'], p['momentum']) == (prev[src][0]['lr'], prev[src][0]['momentum']), pid
    else:
        # the worst member exploited the best one: its checkpoint, its parameters moved
        assert pid - P == ranked[-1] and src == ranked[0], (pid, src, ranked)
        top = prev[src][0]
        assert (p['lr'], p['momentum']) != (top['lr'], top['momentum']), pid
        for key, lo, hi, step in (('lr', math.log(0.001), math.log(0.5), 0.2 * math.log(500)),
                                  ('momentum', 0.0, 0.9, 0.18)):
            f = math.log if key == 'lr' else (lambda x: x)
            d = abs(f(p[key]) - f(top[key]))
            resampled = not math.isclose(d, step, rel_tol=1e-9) and not math.isclose(f(p[key]), lo) \
                and not math.isclose(f(p[key]), hi)
            # moved one step (or clipped to the range), else resampled from the prior
            assert resampled or d <= step + 1e-9, (pid, key, p[key], top[key])
print('ok: %d trials, checkpoints chained' % len(trials))
PY
exploits=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$a' AND parameter_id >= 4 AND
                json_extract(parameters, '$.load_checkpoint_dir') NOT LIKE '%/checkpoint/' || (parameter_id % 4) || '/%'")
[ "$exploits" = 3 ] || fail "one exploit per generation after the first: $exploits"
pass "PBT: 16 trials, every checkpoint saved in NNI's layout and loaded from the previous generation, 3 exploits"

# the same run with two kill -9 of the api (one while a generation waits), resumed
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/b.out"
b=$(exp_id_of "$WORK/b.out")
dir_b=$(sql "SELECT exp_dir FROM experiment WHERE id='$b'")
kill_api_at "$b" "$port" 3 9
wait_status "$b" DONE 240
nnictl stop "$b" > /dev/null
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$b' AND status='SUCCEEDED'")" = 16 ] || fail "run B: not 16"
params() { sql "SELECT parameter_id, replace(parameters, '$2', 'EXP') FROM trial WHERE experiment_id='$1'
                ORDER BY parameter_id"; }
if [ "$(params "$a" "$dir_a")" != "$(params "$b" "$dir_b")" ]; then
    diff <(params "$a" "$dir_a") <(params "$b" "$dir_b") | head -20
    fail "PBT's suggestions changed across kill -9 and resume"
fi
pass "PBT: the same 16 suggestions with and without two api kills"
assert_no_leftovers
echo "40b-pbt: passed"

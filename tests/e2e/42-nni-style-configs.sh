#!/usr/bin/env bash
# NNI-style configs (tests/configs/nni-style: v1 and v2 spellings of every built-in
# algorithm name and alias of NNI 3.0, their classArgs, customized classes by className
# with and without codeDirectory) through `nnictl create --dry-run`: every one is
# accepted, except the refused-*.yml ones, which NNI refuses too and which must be
# refused with the message their first line names. NNI's Python-only built-ins (SMAC,
# PPO, DNGO, NetworkMorphism) need the nni package and their library: the
# stand-ins in tests/dispatcher (NNI's module paths) and tests/dispatcher/libs are on
# PYTHONPATH, as pip would put the real ones; without them each is refused naming what
# to install.
. "$(dirname "$0")/lib.sh"

SET="$TRIALQ_SRC/tests/configs/nni-style"
export PYTHONDONTWRITEBYTECODE=1 TRIALQ_PYTHON=$PY
STANDIN="$TRIALQ_SRC/tests/dispatcher:$TRIALQ_SRC/tests/dispatcher/libs"

accepted=0 refused=0
for f in "$SET"/*.yml; do
    name=$(basename "$f")
    rc=0
    out=$(PYTHONPATH=$STANDIN nnictl create --config "$f" --dry-run 2>&1) || rc=$?
    case "$name" in
    refused-*)
        want=$(sed -n '1s/^# refused: //p' "$f")
        [ -n "$want" ] || fail "$name: no '# refused:' line"
        [ "$rc" != 0 ] || fail "$name: accepted, but NNI refuses it"
        echo "$out" | grep -qF -- "$want" || fail "$name: refused without '$want': $out"
        echo "$out" | grep -q "$name" || fail "$name: the message does not name the file: $out"
        refused=$((refused + 1)) ;;
    *)
        [ "$rc" = 0 ] || fail "$name: refused: $out"
        accepted=$((accepted + 1)) ;;
    esac
done
[ "$accepted" -ge 60 ] && [ "$refused" -ge 8 ] || fail "only $accepted accepted, $refused refused configs"
pass "$accepted NNI-style configs accepted, $refused refused as NNI refuses them"

# what a name resolves to: NNI's class for the Python-only ones, trialq's C tuners for
# the rest (the canonical config keeps the name)
show() { PYTHONPATH=$STANDIN nnictl create --config "$SET/$1" --dry-run; }
show v1-tuner-MetisTuner.yml | grep -q '"name":.*"MetisTuner"' || fail "MetisTuner is not trialq's"
show v2-tuner-PPOTuner.yml | grep -q '"className":.*"nni.algorithms.hpo.ppo_tuner.PPOTuner"' || fail "PPOTuner"
show v2-tuner-DNGO.yml | grep -q '"className":.*"nni.algorithms.hpo.dngo_tuner.DNGOTuner"' || fail "DNGO"
show v1-tuner-SMAC.yml | grep -q '"className":.*"nni.algorithms.hpo.smac_tuner.SMACTuner"' || fail "SMAC"
show v2-tuner-TPE_legacy.yml | grep -q '"name":.*"TPE_legacy"' || fail "TPE_legacy is not trialq's"
show v2-tuner-GPTuner.yml | grep -q '"name":.*"GPTuner"' || fail "GPTuner is not trialq's"
show v1-tuner-PBTTuner.yml | grep -q '"name":.*"PBTTuner"' || fail "PBTTuner is not trialq's"
# PBT runs in C: no python, no nni needed
PYTHONPATH= TRIALQ_PYTHON=/nonexistent/python nnictl create --config "$SET/v2-tuner-PBT.yml" --dry-run >/dev/null ||
    fail "PBT needs python"
# className alone: codeDirectory is the config's directory, as NNI's default "."
show v2-custom-classname-only.yml | grep -q "\"codeDirectory\":.*\"$SET\"" || fail "default codeDirectory"
pass "names resolve: NNI's Python classes for SMAC/PPO/DNGO, C tuners for the others (Metis, PBT included)"

# without the library, or without nni, the Python-only built-ins are refused naming the package
for t in SMAC:"pip install 'nni\[SMAC\]'" PPOTuner:"pip install 'nni\[PPOTuner\]'" DNGO:"pip install 'nni\[DNGO\]'" \
         NetworkMorphism:"pip install nni torch"; do
    n=${t%%:*} want=${t#*:}
    rc=0
    out=$(PYTHONPATH="$TRIALQ_SRC/tests/dispatcher" nnictl create --config "$SET/v2-tuner-$n.yml" --dry-run 2>&1) || rc=$?
    [ "$rc" != 0 ] || fail "$n accepted without its library"
    echo "$out" | grep -q "v2-tuner-$n.yml:[0-9]*:[0-9]*: tuner.name: .* cannot import (ModuleNotFoundError: No module named .*$want" ||
        fail "$n without its library: $out"
done
rc=0
out=$(PYTHONPATH= nnictl create --config "$SET/v1-tuner-NetworkMorphism.yml" --dry-run 2>&1) || rc=$?
[ "$rc" != 0 ] && echo "$out" | grep -q "No module named 'nni'.*pip install nni torch" ||
    fail "NetworkMorphism without nni: $out"
# TRIALQ_PYTHON is the python asked
rc=0
out=$(PYTHONPATH=$STANDIN TRIALQ_PYTHON=/nonexistent/python nnictl create --config "$SET/v2-tuner-SMAC.yml" --dry-run 2>&1) || rc=$?
[ "$rc" != 0 ] && echo "$out" | grep -q "/nonexistent/python cannot import" || fail "TRIALQ_PYTHON not used: $out"
# an import that hangs ends after TRIALQ_IMPORT_TIMEOUT
mkdir -p "$WORK/slow"
echo 'import time; time.sleep(60)' > "$WORK/slow/slowpkg.py"
mkdir -p "$WORK/slow/slowpkg_pkg" && echo 'import time; time.sleep(60)' > "$WORK/slow/slowpkg_pkg/__init__.py"
sed "s|className: my_tuner.MyTuner|className: slowpkg_pkg.sub.T|" "$SET/v2-custom-classname-only.yml" > "$WORK/slow/c.yml"
cp "$SET/search_space.json" "$WORK/slow/"
rc=0
out=$(TRIALQ_IMPORT_TIMEOUT=2 timeout 30 nnictl create --config "$WORK/slow/c.yml" --dry-run 2>&1) || rc=$?
[ "$rc" = 1 ] && echo "$out" | grep -q "no answer in 2 s" || fail "a hanging import: rc=$rc $out"
pass "without nni or the library: refused naming the pip package; TRIALQ_PYTHON asked; a hanging import ends"

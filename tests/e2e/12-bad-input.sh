#!/usr/bin/env bash
# Every broken config given to `nnictl create` fails with its expected message (which
# names file:line:col), exits non-zero, and creates nothing: no experiment row, no
# experiment directory, no process, nothing listening.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
n=0
for f in "$TRIALQ_SRC"/tests/configs/bad/*.yml "$TRIALQ_SRC"/tests/configs/bad-create/*.yml; do
    out=$(cd "$(dirname "$f")" && nnictl create --config "$f" --port "$port" 2>&1) && fail "$f was accepted: $out"
    echo "$out" | grep -q "^ERROR: " || fail "$f: no ERROR line: $out"
    while IFS= read -r want; do
        echo "$out" | grep -qF -- "$want" || fail "$(basename "$f"): expected '$want' in: $out"
    done < <(sed -n 's/^# expect: //p' "$f")
    # every message points into a file: name:line:col, or at least the file
    echo "$out" | grep -qE "\.(yml|json):([0-9]+:[0-9]+:)? " || fail "$(basename "$f"): no file position in: $out"
    n=$((n + 1))
done
[ "$n" -ge 80 ] || fail "only $n broken configs"
rows=$(sql "SELECT count(*) FROM experiment" 2>/dev/null || echo 0)
[ "$rows" = 0 ] || fail "$rows experiments were created from broken configs"
[ -z "$(ls -A "$NNI_HOME" | grep -v '^trialq.db')" ] || { ls -la "$NNI_HOME"; fail "files were created in the home"; }
port_is_free "$port" || fail "something listens on $port"
assert_no_leftovers
echo "12-bad-input: $n broken configs rejected with their messages, nothing created"

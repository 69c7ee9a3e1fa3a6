#!/usr/bin/env bash
# A trial cannot write into the experiment's log: a malformed metric record holding a
# newline and terminal escapes (in $NNI_SYS_DIR/.nni/metrics, framed by its length, and
# on an NNISDK_MEb stdout line) is logged as one escaped line, cut at its framed length;
# the well-formed record right after it is still stored.
. "$(dirname "$0")/lib.sh"

port=$(free_port)
mkdir -p "$WORK/exp"
cat > "$WORK/exp/forge.py" <<'PY'
import json, os
sysdir = os.environ["NNI_SYS_DIR"]
pid = json.load(open(os.path.join(sysdir, "parameter.cfg")))["parameter_id"]
os.makedirs(os.path.join(sysdir, ".nni"), exist_ok=True)
def frame(payload):
    return b"ME%06d" % len(payload) + payload
bad = b'{"type":"X\n[2000-01-01 00:00:00] ERROR (api 1) forged line\x1b[31m red\x1b]0;title\x07"}\n'
good = json.dumps({"parameter_id": pid, "trial_job_id": os.environ["NNI_TRIAL_JOB_ID"], "type": "FINAL",
                   "sequence": 0, "value": "0.5"}).encode() + b"\n"
with open(os.path.join(sysdir, ".nni", "metrics"), "ab") as f:
    f.write(frame(bad) + frame(good))
os.write(1, b"NNISDK_MEb'{\"type\":\x1b[2J\"PERIODICAL\\u\r[2000-01-01 00:00:00] ERROR stdout forged'\n")
PY
write_config "$WORK/exp/config.yml" searchSpace='{x: {_type: choice, _value: [1]}}' trialCommand='python3 forge.py' \
    tuner='{name: GridSearch}'
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
wait_status "$id" DONE 60
[ "$(sql "SELECT status || ' ' || final_metric FROM trial WHERE experiment_id='$id'")" = "SUCCEEDED 0.5" ] ||
    fail "the record after the malformed one was not stored: $(sql "SELECT status, final_metric FROM trial")"

logs=("$NNI_HOME/$id/log/"*.log)
grep -h "ignoring bad metric record" "${logs[@]}" > "$WORK/warned" || fail "no warning for the malformed records"
[ "$(wc -l < "$WORK/warned")" = 2 ] || fail "$(wc -l < "$WORK/warned") warnings, wanted 2: $(cat "$WORK/warned")"
grep -q '^\[2000-01-01' "${logs[@]}" && fail "a trial forged a log line: $(grep -h '^\[2000-01-01' "${logs[@]}")"
grep -l $'\x1b' "${logs[@]}" && fail "a terminal escape reached the log"
grep -l $'\r' "${logs[@]}" && fail "a carriage return reached the log"
grep -qF 'X\n[2000-01-01 00:00:00] ERROR (api 1) forged line\x1b[31m red\x1b]0;title\x07"}\n' "$WORK/warned" ||
    fail "the file record is not shown escaped: $(cat "$WORK/warned")"
grep -qF '{"type":\x1b[2J"PERIODICAL\\u\r[2000-01-01 00:00:00] ERROR stdout forged' "$WORK/warned" ||
    fail "the stdout record is not shown escaped: $(cat "$WORK/warned")"
# cut at its frame: the next record ("ME...FINAL") is not part of the snippet
grep -q 'forged line.*FINAL' "$WORK/warned" && fail "the snippet ran past the record's framed length"
pass "malformed metric records logged as one escaped line each, cut at the frame"
nnictl stop "$id" > /dev/null
assert_no_leftovers
echo "28-metric-log-escape: passed"

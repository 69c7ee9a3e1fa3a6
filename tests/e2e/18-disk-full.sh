#!/usr/bin/env bash
# Issue 18: a full disk is seen by the user and costs nothing. The experiment's home is
# a 6 MB tmpfs; while 4 trials run (each writing many intermediate metrics, and retrying
# a write that meets ENOSPC, as a careful training job does), a filler file takes all of
# it: check-status `errors` and `nnictl experiment status` name the path within seconds,
# no new trial starts while it is full, and the trials that end meanwhile are not run
# again (their ends are recorded once space is back). The filler removed, the error
# clears and the experiment ends DONE, every trial SUCCEEDED in attempt 1 with exactly
# the metrics it wrote, integrity_check ok.
. "$(dirname "$0")/lib.sh"

if ! mount -t tmpfs -o size=6m tmpfs "$NNI_HOME" 2>/dev/null; then
    echo "SKIP: cannot mount a tmpfs (needs root or CAP_SYS_ADMIN)"
    exit 77
fi
# the tmpfs goes, after what lib.sh's cleanup reads (logs, sanitizer reports) is copied out
tmpfs_cleanup() {
    local rc=$?
    nnictl stop --all > /dev/null 2>&1 || true
    rm -f "$NNI_HOME/filler"
    cp -a "$NNI_HOME" "$WORK/home.copy" 2> /dev/null || true
    umount "$NNI_HOME" 2> /dev/null || umount -l "$NNI_HOME" 2> /dev/null || true
    cp -a "$WORK/home.copy/." "$NNI_HOME/" 2> /dev/null || true
    (exit "$rc")
    cleanup
}
trap tmpfs_cleanup EXIT

port=$(free_port)
mkdir -p "$WORK/exp"
cat > "$WORK/exp/steps.py" <<'PY'
# NNI's file protocol, each record written whole: a write that meets a full disk is
# undone (truncated back) and tried again, so the file never holds half a record
import errno, os, re, time
d = os.environ['NNI_SYS_DIR']
cfg = open(os.path.join(d, 'parameter.cfg')).read()
pid = re.search(r'"parameter_id":(\d+)', cfg).group(1)
x = re.search(r'"x":([-0-9.e+]+)', cfg).group(1)
os.makedirs(os.path.join(d, '.nni'), exist_ok=True)
def append(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        while True:
            size = os.fstat(fd).st_size
            try:
                if os.write(fd, data) == len(data):
                    return
            except OSError as e:
                if e.errno not in (errno.ENOSPC, errno.EDQUOT):
                    raise
            os.ftruncate(fd, size)
            time.sleep(0.1)
    finally:
        os.close(fd)
def emit(kind, seq, value):
    rec = '{"parameter_id":%s,"trial_job_id":"%s","type":"%s","sequence":%d,"value":"%s"}' % (
        pid, os.environ['NNI_TRIAL_JOB_ID'], kind, seq, value)
    append(os.path.join(d, '.nni', 'metrics'), ('ME%06d%s\n' % (len(rec) + 1, rec)).encode())
    append(os.path.join(d, 'written.log'), ('%s %d %s\n' % (kind, seq, value)).encode())
for i in range(60):
    emit('PERIODICAL', i, '%s.%d' % (x, i))
    time.sleep(0.05)
emit('FINAL', 0, x)
PY
write_config "$WORK/exp/config.yml" trialCommand='python3 steps.py' trialConcurrency=4 maxTrialNumber=16 \
    tuner='{name: Random, classArgs: {seed: 18}}'

nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out"
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || fail "no experiment id printed"
cs() { curl -sf "http://127.0.0.1:$port/api/v1/nni/check-status"; }

# 4 trials run and have written metrics: fill the disk
wait_sql "SELECT count(*) FROM metric m JOIN trial t ON t.id = m.trial_id WHERE t.experiment_id='$id'" '>=40' 20 \
    "40 metrics stored before the disk fills"
dd if=/dev/zero of="$NNI_HOME/filler" bs=64k 2> /dev/null || true
[ "$(df --output=avail -k "$NNI_HOME" | tail -n1 | tr -d ' ')" -le 4 ] || fail "the tmpfs is not full"
pass "the home's tmpfs is full"

# within seconds, the error names the path
disk_full_shown() {
    errs=$(cs | $PY -c 'import json,sys; print("\n".join(json.load(sys.stdin)["errors"]))' || true)
    grep -q "$NNI_HOME" <<< "$errs" && grep -qiE 'disk full|ENOSPC|SQLITE_FULL' <<< "$errs"
}
wait_until 10 disk_full_shown || { cs; fail "check-status shows no disk-full error naming $NNI_HOME within 10 s"; }
echo "$errs"
pass "check-status errors name the full path"
nnictl experiment status "$id" | grep -q "$NNI_HOME" || fail "nnictl experiment status shows no error"
nnictl experiment show "$id" | grep -q "$NNI_HOME" || fail "nnictl experiment show shows no error"
pass "nnictl experiment status and show name it too"

# no new trial starts while it is full; the trials that end meanwhile wait, unrecorded
sleep 2
started=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND start_time IS NOT NULL")
sleep 6
started2=$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND start_time IS NOT NULL")
[ "$started2" = "$started" ] || fail "trials started while the disk was full ($started, then $started2)"
pass "no trial started while the disk was full ($started started before)"

rm -f "$NNI_HOME/filler"
no_errors() { [ "$(cs | $PY -c 'import json,sys; print(len(json.load(sys.stdin)["errors"]))' || echo x)" = 0 ]; }
wait_until 10 no_errors || { cs; fail "the error did not clear within 10 s of freeing space"; }
pass "the error cleared once space was freed"

wait_status "$id" DONE 180
pass "experiment reached DONE"
[ "$(sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED' AND attempt=1")" = 16 ] ||
    { sql "SELECT id, status, attempt, message FROM trial WHERE experiment_id='$id'"; fail "not every trial SUCCEEDED in attempt 1"; }
ls "$NNI_HOME/$id/trials" | grep -q attempt && fail "a trial was run again"
pass "16 SUCCEEDED, each in attempt 1"
assert_metrics_match "$id"
pass "metric rows equal what the trials wrote"
[ "$(sql 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
pass "integrity_check ok"

#!/usr/bin/env bash
# Issue 32, the remote platform: a trial that failed while the filesystem of its trial
# directory on the remote machine was full says so, as on the local platform (e2e/18b
# part 3). The remote user's nni-experiments is a 4 MB tmpfs; one at a time, trial 0
# fills it, waits 2 s, frees it and exits 1; trial 1 exits 1 with room; trial 2 fills it
# and exits 1 with it still full (its end record goes over the room its runner kept).
# Trials 0 and 2 say "exit code 1; the disk of its trial directory was full while it
# ran" (database, REST, `nnictl trial ls`); trial 1 says only "exit code 1". All three
# FAILED in attempt 1 (the end recorded on a full disk, not taken for a vanished job).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/remote.sh"
remote_machines

rhome=/home/tqremote1/nni-experiments
mkdir -p "$rhome"
if ! mount -t tmpfs -o size=4m,mode=0700 tmpfs "$rhome" 2>/dev/null; then
    echo "SKIP: cannot mount a tmpfs (needs root or CAP_SYS_ADMIN)"
    exit 77
fi
chown tqremote1: "$rhome"
# the tmpfs goes once nothing of the experiment is left on it
tmpfs_exit() {
    local rc=$?
    find "$rhome" -name junk -delete 2> /dev/null || true
    nnictl stop --all > /dev/null 2>&1 || true
    for p in $(remote_procs "${REMOTE_EXPS:-none}"); do kill -9 "$p" 2> /dev/null || true; done
    umount "$rhome" 2> /dev/null || umount -l "$rhome" 2> /dev/null || true
    (exit "$rc")
    remote_on_exit
}
trap tmpfs_exit EXIT

mkdir -p "$WORK/exp"
cp "$TRIALQ_SRC/tests/e2e/trials/fill_disk.sh" "$WORK/exp/fill.sh"
write_config "$WORK/exp/fill.yml" trialCommand='sh fill.sh' trialConcurrency=1 maxTrialNumber=3 \
    trainingService="$(remote_ts 1)"
port=$(free_port)
nnictl create --config "$WORK/exp/fill.yml" --port "$port" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create"; }
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || { cat "$WORK/create.out"; fail "no experiment id"; }
REMOTE_EXPS="$id"
wait_sql "SELECT count(*) FROM trial WHERE experiment_id='$id' AND end_time IS NOT NULL" 3 90 "3 trials ended"
[ "$(stat -f -c %a "$rhome")" = 0 ] || fail "the tmpfs is not full at trial 2's end"
disk_full_messages "$id" "$port"
pass "the remote trials that met a full disk say so, the other only its exit code; REST and nnictl trial ls show it"
rm -f "$(remote_dir_of "$FULL_T2")/junk"
nnictl stop "$id" > /dev/null
sql_is "PRAGMA integrity_check" ok || fail "integrity_check"
remote_wait_no_procs "$id" 20
pass "stopped; nothing left on the machine"

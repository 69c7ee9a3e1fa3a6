#!/bin/bash
# 05-systemd-units: every unit file in contrib/systemd (system units) and
# contrib/systemd/user (user units) passes `systemd-analyze verify` without a single
# line of output. verify exits 0 on unknown keys and bad values, so any output fails.
# The units' ExecStart (/usr/local/bin/trialq) is pointed at $TRIALQ_BIN (or /bin/true)
# because verify checks that the program exists.
set -euo pipefail

src=${TRIALQ_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${TRIALQ_BIN:-/bin/true}
analyze=/usr/bin/systemd-analyze
installed_bin=/usr/local/bin/trialq

fail() { echo "FAIL: $*" >&2; exit 1; }

[ -x "$analyze" ] || fail "$analyze not found (apt-get install systemd)"
[ -x "$bin" ] || fail "TRIALQ_BIN=$bin is not an executable"
case $bin in /*) ;; *) bin=$PWD/$bin ;; esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/system" "$tmp/user" "$tmp/runtime" "$tmp/selftest"
chmod 700 "$tmp/runtime"
# A symlink keeps ExecStart a single word even if the build path has spaces.
ln -s "$bin" "$tmp/bin/trialq"

# verify UNIT_FILE [--user]: run systemd-analyze, fail on any output.
verify() {
    local file=$1 out what
    shift
    what="systemd-analyze ${*:+$* }verify $(basename "$file")"
    if ! out=$(XDG_RUNTIME_DIR=$tmp/runtime "$analyze" "$@" verify "$file" 2>&1); then
        fail "$what failed:"$'\n'"$out"
    fi
    [ -z "$out" ] || fail "$what complained:"$'\n'"$out"
}

# Self-test: a unit with an unknown key must be reported, or this test proves nothing.
printf '[Unit]\nDescription=x\n[Service]\nExecStart=/bin/true\nNoSuchKey=1\n' \
    > "$tmp/selftest/selftest.service"
out=$("$analyze" verify "$tmp/selftest/selftest.service" 2>&1 || true)
[ -n "$out" ] || fail "systemd-analyze printed nothing for an unknown key"

count=0
for scope in system user; do
    dir=$src/contrib/systemd
    [ "$scope" = system ] || dir=$dir/user
    for unit in "$dir"/*.service "$dir"/*.target; do
        [ -e "$unit" ] || continue
        name=$(basename "$unit")
        sed "s#$installed_bin#$tmp/bin/trialq#g" "$unit" > "$tmp/$scope/$name"
        if grep -q '^ExecStart=' "$unit"; then
            grep -q "^ExecStart=$installed_bin " "$unit" ||
                fail "$name: ExecStart must run $installed_bin (the path the docs install to)"
            grep -q "^ExecStart=$tmp/bin/trialq " "$tmp/$scope/$name" ||
                fail "$name: ExecStart was not redirected to the test binary"
        fi
        count=$((count + 1))
    done
    for unit in "$tmp/$scope"/*; do
        if [ "$scope" = user ]; then
            verify "$unit" --user
        else
            verify "$unit"
        fi
    done
done

# What the documentation promises: trials (under the worker's supervisors) survive a
# restart of either unit, and the worker has no PrivateTmp that would vanish under them.
for unit in trialq-api@.service trialq-worker@.service user/trialq-api@.service \
            user/trialq-worker@.service; do
    f=$src/contrib/systemd/$unit
    grep -qx 'KillMode=process' "$f" || fail "$unit: KillMode=process is missing"
done
for unit in trialq-worker@.service user/trialq-worker@.service; do
    f=$src/contrib/systemd/$unit
    grep -qx 'Restart=always' "$f" || fail "$unit: Restart=always is missing"
    if grep -q '^PrivateTmp=yes' "$f"; then fail "$unit: PrivateTmp would be removed under running trials"; fi
done

[ "$count" -gt 0 ] || fail "no unit files found in $src/contrib/systemd"
echo "systemd units: $count verified"

#!/usr/bin/env bash
# deb_install.sh DEB WORK PORT: run by e2e/06-debian-package as root in a mount
# namespace of its own (unshare -m): /usr, /etc and /var become overlays on a tmpfs, so
# that what happens here (build dependencies purged, the package installed and removed)
# is seen by nothing outside and is gone afterwards. On that machine without the build
# dependencies: dpkg -i, the README's quickstart to DONE as a user would run it (HOME
# a fresh folder), the man pages and the completion, then dpkg -r, which must leave
# ~/nni-experiments as it was.
set -euo pipefail
deb=$1 work=$2 port=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

mkdir -p "$work/ov"
mount -t tmpfs tmpfs "$work/ov"
for d in usr etc var; do
    mkdir -p "$work/ov/$d/u" "$work/ov/$d/w"
    mount -t overlay overlay -o "lowerdir=/$d,upperdir=$work/ov/$d/u,workdir=$work/ov/$d/w" "/$d"
done

# the build dependencies go (scripts/install-deps.sh --build's headers and tools)
build_deps=(libsqlite3-dev libcurl4-openssl-dev libyaml-dev libcjson-dev libssh2-1-dev libevent-dev libssl-dev
    libcmocka-dev cmake pkg-config)
installed=()
for p in "${build_deps[@]}"; do
    if dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then installed+=("$p"); fi
done
[ ${#installed[@]} = 0 ] || dpkg --purge --force-depends "${installed[@]}" > "$work/purge.log" 2>&1 ||
    { cat "$work/purge.log" >&2; fail "purging the build dependencies"; }
for f in /usr/include/sqlite3.h /usr/include/curl/curl.h /usr/include/yaml.h /usr/include/cjson/cJSON.h \
    /usr/include/libssh2.h /usr/include/event2/event.h /usr/include/openssl/ssl.h /usr/bin/cmake; do
    [ ! -e "$f" ] || fail "$f is still there after the purge"
done
dpkg -s trialq > /dev/null 2>&1 && fail "trialq is installed already"

dpkg -i "$deb" > "$work/dpkg-i.log" 2>&1 || { cat "$work/dpkg-i.log" >&2; fail "dpkg -i $(basename "$deb")"; }
dpkg -s trialq | grep -q '^Status: install ok installed$' || fail "dpkg -s trialq after dpkg -i"
# installed disabled: no unit enabled, nothing started
found=$(find /etc/systemd -name 'trialq*' 2>/dev/null)
[ -z "$found" ] || fail "units enabled by the package: $found"
pass "dpkg -i $(basename "$deb") without the build dependencies (${#installed[@]} purged); no unit enabled"

# the README's quickstart, as a user runs it: /usr/bin on PATH, a fresh HOME, no NNI_HOME
home=$work/user-home
mkdir -p "$home"
run() { env -i PATH=/usr/bin:/bin HOME="$home" LANG=C.UTF-8 "$@"; }
cd /
run nnictl --version | grep -qx "$(dpkg-deb -f "$deb" Version)" || fail "nnictl --version is not the package's version"
run nnictl create --config /usr/share/trialq/examples/quickstart/config.yml --port "$port" --foreground \
    > "$work/quickstart.out" 2>&1 || { tail -30 "$work/quickstart.out" >&2; fail "the quickstart failed"; }
id=$(sed -n 's/.*Experiment ID: \([a-z0-9]*\).*/\1/p' "$work/quickstart.out" | head -n1)
[ -n "$id" ] || { cat "$work/quickstart.out" >&2; fail "no experiment id in the quickstart's output"; }
run nnictl experiment status "$id" > "$work/status.out" 2>&1 || fail "nnictl experiment status $id"
grep -q '"DONE"' "$work/status.out" || { cat "$work/status.out" >&2; fail "the quickstart's experiment is not DONE"; }
db=$home/nni-experiments/trialq.db
count() { python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$db" "$1"; }
succeeded=$(count "SELECT count(*) FROM trial WHERE experiment_id='$id' AND status='SUCCEEDED'")
[ "$succeeded" = 24 ] || fail "$succeeded of the quickstart's 24 trials SUCCEEDED"
pass "the quickstart from /usr/share/trialq/examples: DONE, 24 trials SUCCEEDED"

# the man pages and the completion, where the package put them
for page in nnictl trialq; do
    f=/usr/share/man/man1/$page.1.gz
    [ -s "$f" ] || fail "$f missing"
    if command -v man > /dev/null; then
        [ "$(man -w "$page")" = "$f" ] || fail "man -w $page: $(man -w "$page" 2>&1)"
    fi
done
ids=$(run bash -c '. /usr/share/bash-completion/completions/nnictl; COMP_WORDS=(nnictl experiment show ""); COMP_CWORD=3
                   _nnictl; printf "%s\n" "${COMPREPLY[@]}"')
[ "$ids" = "$id" ] || fail "completion of experiment show offered '$ids', not $id"
pass "man nnictl, man trialq; the installed completion offers the experiment's id"

# dpkg -r: the package's files go, the user's experiments stay
before=$(cd "$home/nni-experiments" && find . -type f | sort | xargs sha256sum)
dpkg -r trialq > "$work/dpkg-r.log" 2>&1 || { cat "$work/dpkg-r.log" >&2; fail "dpkg -r trialq"; }
for f in /usr/bin/nnictl /usr/bin/trialq /usr/bin/trialq-supervise /usr/share/trialq /usr/lib/systemd/user/trialq-api@.service \
    /usr/share/bash-completion/completions/nnictl; do
    [ ! -e "$f" ] && [ ! -L "$f" ] || fail "$f is left after dpkg -r"
done
after=$(cd "$home/nni-experiments" && find . -type f | sort | xargs sha256sum)
[ -n "$before" ] && [ "$before" = "$after" ] || fail "dpkg -r changed ~/nni-experiments"
[ "$(count "SELECT status FROM experiment WHERE id='$id'")" = DONE ] || fail "the experiment's row after dpkg -r"
pass "dpkg -r removes every file of the package (no folder left) and leaves ~/nni-experiments unchanged"

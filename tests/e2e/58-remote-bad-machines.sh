#!/usr/bin/env bash
# nnictl create checks every machine and says which one failed and why, creating
# nothing: unknown host key (unless acceptNewHostKeys, which records it), a changed host
# key, a wrong password, an RSA key the server refuses (libssh2 1.10 signs with SHA-1),
# an unreachable port, a code directory over NNI's 2,000-entry limit.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib/remote.sh"
remote_machines

mkdir -p "$WORK/exp"
cp "$TRIALQ_SRC/tests/e2e/trials/metrics.sh" "$WORK/exp/"
cfg="$WORK/exp/config.yml"

# expect_refused NAME REGEX: create fails, prints REGEX, creates no experiment
expect_refused() {
    local before out
    before=$(sql "SELECT count(*) FROM experiment" 2>/dev/null || echo 0)
    if nnictl create --config "$cfg" --port "$(free_port)" > "$WORK/$1.out" 2>&1; then
        cat "$WORK/$1.out"; fail "$1: create succeeded"
    fi
    grep -qE "$2" "$WORK/$1.out" || { cat "$WORK/$1.out"; fail "$1: message does not match /$2/"; }
    [ "$(sql "SELECT count(*) FROM experiment" 2>/dev/null || echo 0)" = "$before" ] || fail "$1: an experiment was created"
    pass "$1: $(grep -oE "$2" "$WORK/$1.out" | head -1)"
}
m1="tqremote1@127.0.0.1:${SSHD_PORT[1]}"
m2="tqremote2@127.0.0.1:${SSHD_PORT[2]}"

# unknown host key: refused, known_hosts untouched
remote_config "$cfg" 2 2
: > "$WORK/known_hosts"
expect_refused unknown-host "machine $m1: host key of \[127.0.0.1\]:${SSHD_PORT[1]} is not in .*acceptNewHostKeys"
[ ! -s "$WORK/known_hosts" ] || fail "known_hosts was written without acceptNewHostKeys"

# acceptNewHostKeys: accepted and recorded, exactly the servers' keys
sed -i "s|^  knownHostsFile:.*|&\n  acceptNewHostKeys: true|" "$cfg"
# (remote_config rewrote known_hosts; start from an empty one again)
: > "$WORK/known_hosts"
nnictl create --config "$cfg" --port "$(free_port)" > "$WORK/accept.out" 2>&1 || { cat "$WORK/accept.out"; fail "accept-new create"; }
id=$(exp_id_of "$WORK/accept.out")
REMOTE_EXPS="$id"
for n in 1 2; do
    grep -qF "[127.0.0.1]:${SSHD_PORT[$n]} $(cut -d' ' -f1,2 "$WORK/hostkey-$n.pub")" "$WORK/known_hosts" ||
        { cat "$WORK/known_hosts"; fail "host key of machine $n not recorded"; }
done
wait_status "$id" DONE 120
nnictl stop "$id" > /dev/null
pass "acceptNewHostKeys recorded both host keys in knownHostsFile"

# changed host key: machine 1's entry holds machine 2's key
remote_config "$cfg" 2 2
echo "[127.0.0.1]:${SSHD_PORT[1]} $(cut -d' ' -f1,2 "$WORK/hostkey-2.pub")" > "$WORK/known_hosts"
remote_known_host 2 >> "$WORK/known_hosts"
expect_refused changed-key "machine $m1: HOST KEY CHANGED"

# wrong password
remote_config "$cfg" 2 2
sed -i "s/password: $REMOTE_PASS/password: wrong-password/" "$cfg"
expect_refused wrong-password "machine $m1: authentication refused"

# an RSA key: OpenSSH refuses libssh2's ssh-rsa (SHA-1) signature
remote_config "$cfg" 2 2
sed -i "s|sshKeyFile: $WORK/id_ed25519|sshKeyFile: $WORK/id_rsa|" "$cfg"
expect_refused rsa-key "machine $m2: RSA key refused by the server.*ed25519"

# nothing listens
remote_config "$cfg" 2 2
dead=$(free_port)
sed -i "s/port: ${SSHD_PORT[2]}/port: $dead/" "$cfg"
expect_refused unreachable "machine tqremote2@127.0.0.1:$dead: unreachable: cannot connect .*refused"

# too many files for NNI's limit
remote_config "$cfg" 2 2
mkdir -p "$WORK/exp/many"
for i in $(seq 1 2000); do : > "$WORK/exp/many/f$i"; done
expect_refused too-many-files "more than 2000 files and directories"
echo "many/" > "$WORK/exp/.nniignore"
nnictl create --config "$cfg" --port "$(free_port)" > "$WORK/ignored.out" 2>&1 || { cat "$WORK/ignored.out"; fail ".nniignore did not bring it under the limit"; }
id2=$(exp_id_of "$WORK/ignored.out")
REMOTE_EXPS="$id $id2"
wait_status "$id2" DONE 120
[ ! -e "/home/tqremote1/nni-experiments/$id2/nni-code/many" ] || fail "ignored dir shipped"
pass ".nniignore brings the code directory under the limit; the ignored dir is not shipped"

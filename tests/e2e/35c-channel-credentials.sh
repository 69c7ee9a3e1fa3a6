#!/usr/bin/env bash
# The trial channel's credentials (issue 29, findings 2 and 9). A trial's channel URL
# holds its token (/env/<token>/<trial>), and whoever has it can store the trial's
# metrics. Here the api listens beyond loopback (--bind on an address of this machine
# that a network namespace reaches over a veth pair) and a trial runs with
# trialCommandChannel: http. Neither another local user (nobody, through setpriv) nor a
# peer in the namespace, both without the experiment's token, can get a trial's token:
# trial-file refuses .nni/ however the name is encoded or linked (403, token nowhere in
# the answer), .nni/ is 0700 and .nni/channel 0600 (nobody cannot read them, although
# every folder above is made open), no file trial-file serves holds the token, and guessed
# tokens store nothing on the leader's port or the api's /env/. Then the trial's own
# unknown command type reaches trial.stderr escaped (one line, no escape sequence).
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || { echo "skip: needs root (setpriv, a network namespace)"; exit 77; }
command -v ip > /dev/null && command -v setpriv > /dev/null || { echo "skip: no ip or setpriv"; exit 77; }

# ---- a peer beyond loopback: a network namespace on a veth pair ----
ns=tq35c$$
net="10.$((RANDOM % 200 + 20)).$((RANDOM % 250))"
host_ip=$net.1 peer_ip=$net.2
trap 'rc=$?; ip netns del "$ns" 2> /dev/null || true; (exit $rc); cleanup' EXIT
ip netns add "$ns"
ip link add "tqh$$" type veth peer name "tqp$$"
ip link set "tqp$$" netns "$ns"
ip addr add "$host_ip/30" dev "tqh$$"
ip link set "tqh$$" up
ip netns exec "$ns" ip addr add "$peer_ip/30" dev "tqp$$"
ip netns exec "$ns" ip link set "tqp$$" up
ip netns exec "$ns" ip link set lo up
peer() { ip netns exec "$ns" "$@"; }
nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }

# ---- an experiment bound to host_ip, a trial on the HTTP channel ----
chmod 755 "$WORK" # as a home folder is: every user may pass through
port=$(free_port)
mkdir -p "$WORK/exp"
write_config "$WORK/exp/config.yml" searchSpace='{x: {_type: uniform, _value: [0, 1]}}' trialCommand='sleep 120' \
    maxTrialNumber=1 trialCommandChannel=http
nnictl create --config "$WORK/exp/config.yml" --port "$port" --bind "$host_ip" > "$WORK/create.out" 2>&1 ||
    { cat "$WORK/create.out"; fail "create"; }
id=$(exp_id_of "$WORK/create.out")
tid_running() { [ -n "$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='RUNNING'")" ]; }
wait_until 30 tid_running || fail "no trial runs"
tid=$(sql "SELECT id FROM trial WHERE experiment_id='$id' AND status='RUNNING'")
tdir="$NNI_HOME/$id/trials/$tid"
wait_until 10 test -s "$tdir/.nni/channel" || fail "no .nni/channel"
url=$(cat "$tdir/.nni/channel")
tok=$($PY "$TRIALQ_SRC/tests/e2e/chantoken.py" "$(sql "SELECT token FROM experiment WHERE id='$id'")" "$tid")
[[ "$url" == "http://127.0.0.1:"*"/env/$tok/$tid" ]] || fail "channel URL $url"
leader=${url%%/env/*}
api="http://$host_ip:$port/api/v1/nni"
wait_until 10 peer curl -sf -o /dev/null --max-time 2 "$api/check-status" || fail "the peer does not reach the api"
nobody curl -s -o /dev/null --max-time 10 "$api/check-status" || fail "nobody does not reach the api"

# ---- trial-file refuses .nni/, however named ----
ln -s .nni/channel "$tdir/chan.txt"   # links into .nni/: the file, and the folder
ln -s .nni "$tdir/nnidir"
mkdir -p "$tdir/out" && ln -s ../.nni "$tdir/out/up"
for name in .nni%2Fchannel %2Enni%2Fchannel %2enni%2fchannel %252Enni%252Fchannel %25252Enni%25252Fchannel \
            out%2F..%2F.nni%2Fchannel .nni chan.txt nnidir%2Fchannel out%2Fup%2Fchannel .nni%2Fjob.lock; do
    for who in peer nobody; do
        # the body through our own redirection: nobody may not write in $WORK
        $who curl -s --path-as-is -w '\n%{http_code}' --max-time 10 "$api/trial-file/$tid/$name" > "$WORK/got"
        code=$(tail -n 1 "$WORK/got")
        case "$code" in 400|403) ;; *) fail "$who: trial-file/$tid/$name answered $code: $(head -c 300 "$WORK/got")";; esac
        ! grep -qF "$tok" "$WORK/got" || fail "$who: trial-file/$tid/$name gave the token"
    done
done
peer curl -s -w '\n%{http_code}' --max-time 10 "$api/trial-file/$tid/parameter.cfg" > "$WORK/got"
code=$(tail -n 1 "$WORK/got")
[ "$code" = 200 ] && grep -q parameter_id "$WORK/got" || fail "trial-file/$tid/parameter.cfg: $code"
pass "trial-file refuses .nni/ (encoded once, twice, thrice, through '..' and links), serves the rest"

# ---- the files themselves ----
# the experiment's folder is 0700; one another user can pass through (a shared
# experimentWorkingDirectory, a looser umask) must still keep .nni/ to trialq's user
chmod 755 "$NNI_HOME/$id"
[ "$(stat -c %a "$tdir/.nni")" = 700 ] || fail ".nni/ is mode $(stat -c %a "$tdir/.nni"), not 700"
[ "$(stat -c %a "$tdir/.nni/channel")" = 600 ] || fail ".nni/channel is mode $(stat -c %a "$tdir/.nni/channel")"
nobody test -r "$tdir/parameter.cfg" || fail "nobody cannot read parameter.cfg: the folders above are closed"
! nobody cat "$tdir/.nni/channel" > /dev/null 2>&1 || fail "nobody reads .nni/channel"
! nobody ls "$tdir/.nni" > /dev/null 2>&1 || fail "nobody lists .nni/"
grep -qF "$tok" "$tdir/.nni/channel" || fail "the token is not in .nni/channel (the search below would prove nothing)"
leaks=$(find "$tdir" -name '.*' -prune -o -type f -print0 | xargs -0 -r grep -lF "$tok" || true)
[ -z "$leaks" ] || fail "files trial-file serves hold the token: $leaks"
pass ".nni/ 0700, .nni/channel 0600: nobody reads neither; no servable file holds the token"

# ---- guessing stores nothing; the right token does (so the refusals mean something) ----
metric() { # type seq
    $PY -c 'import json,sys; print(json.dumps({"type":"metric","metric":json.dumps({"parameter_id":0,"trial_job_id":sys.argv[1],"type":sys.argv[2],"sequence":int(sys.argv[3]),"value":"0.5"})}))' "$tid" "$1" "$2"
}
put() { # who url body
    $1 curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X PUT -H 'Content-Type: application/json' --data-binary "$3" "$2"
}
final=$(metric FINAL 0)
other=$($PY "$TRIALQ_SRC/tests/e2e/chantoken.py" 00112233445566778899aabbccddeeff "$tid")
for guess in "$other" "${tok%?}0" "${tok:0:31}" 0000 "$tok$tok"; do
    [ "$guess" != "$tok" ] || continue
    for who in peer nobody; do
        code=$(put "$who" "http://$host_ip:$port/env/$guess/$tid" "$final")
        [ "$code" = 403 ] || [ "$code" = 404 ] || fail "$who: the api's channel took a guessed token: $code"
    done
    code=$(put nobody "$leader/env/$guess/$tid" "$final")
    [ "$code" = 404 ] || fail "nobody: the leader's port took a guessed token: $code"
done
code=$(put peer "http://$host_ip:$port/env/$tok/$tid" "$(metric PERIODICAL 0)")
[ "$code" = 200 ] || fail "the api's channel with the trial's own token: $code"
wait_sql "SELECT count(*) FROM metric WHERE trial_id='$tid'" 1 10 "the trial's own metric not stored"
sleep 1
[ "$(sql "SELECT count(*) FROM metric WHERE trial_id='$tid' AND type='FINAL'")" = 0 ] || fail "a guessed FINAL was stored"
[ -z "$(sql "SELECT final_metric FROM trial WHERE id='$tid'")" ] || fail "the trial has a final metric"
pass "guessed tokens: nothing stored (leader's port, api's /env/, from nobody and the peer); the own token works"

# ---- the trial's unknown command type reaches trial.stderr escaped ----
code=$(put "" "$url" '{"type":"\u001b[31mRED\nFORGED line\u0007\\x"}')
[ "$code" = 200 ] || fail "unknown type: $code"
wait_until 10 grep -qF 'unexpected command type' "$tdir/trial.stderr" || fail "no line about the unknown type"
grep -qF 'unexpected command type \x1b[31mRED\nFORGED line\x07\\x' "$tdir/trial.stderr" ||
    { cat -v "$tdir/trial.stderr"; fail "the unknown type is not escaped"; }
! grep -q $'\x1b\|^FORGED' "$tdir/trial.stderr" || { cat -v "$tdir/trial.stderr"; fail "raw escape or a forged line"; }
pass "the unknown command type reaches trial.stderr as one escaped line"

nnictl stop "$id" > /dev/null

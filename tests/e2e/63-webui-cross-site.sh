#!/usr/bin/env bash
# Cross-site requests in a real browser (headless chromium, tests/webui/crosssite.js):
# the api on loopback needs no token, so a page of another site open in the user's
# browser must not be able to add or rerun trials, change settings or take the tuner's
# WebSocket, and neither may a page that reaches the api under its own DNS name (DNS
# rebinding). The api's own web UI still changes things.
. "$(dirname "$0")/lib.sh"

webui_setup   # sets UI; chromium, node and playwright-core

# one grid point: the tuner is done after one trial, so the trial count only moves when
# a request adds one (the budget leaves room for that)
mkdir -p "$WORK/exp"
cp "$TRIALQ_SRC/tests/e2e/trials/metrics.sh" "$WORK/exp/"
write_config "$WORK/exp/config.yml" searchSpace='{x: {_type: choice, _value: [1]}}' trialCommand='sh metrics.sh' \
    maxTrialNumber=50 tuner='{name: GridSearch}'
port=$(free_port)
nnictl create --config "$WORK/exp/config.yml" --port "$port" > "$WORK/create.out" || { cat "$WORK/create.out"; fail "create"; }
id=$(exp_id_of "$WORK/create.out")
wait_status "$id" DONE 60

# the other site: any page served from another origin
mkdir -p "$WORK/evil"
echo '<!doctype html><title>another site</title><p>hello' > "$WORK/evil/index.html"
evil_port=$(free_port)
(cd "$WORK/evil" && exec $PY -m http.server "$evil_port" --bind 127.0.0.1) > "$WORK/evil.log" 2>&1 &
evil_pid=$!
wait_http "http://127.0.0.1:$evil_port/index.html" 10 "" "the other site's server"

rc=0
node "$UI/crosssite.js" "http://127.0.0.1:$port" "http://localhost:$evil_port" "http://evil.test:$port" "$DB" "$id" || rc=$?
kill "$evil_pid" 2>/dev/null; wait "$evil_pid" 2>/dev/null || true
[ "$rc" = 0 ] || fail "browser test (cross-site) failed"
pass "cross-site requests from a browser change nothing; the own UI still can"

nnictl stop "$id" > /dev/null
assert_no_leftovers

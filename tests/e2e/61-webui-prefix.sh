#!/usr/bin/env bash
# The web UI under a URL prefix (nnictl create --url_prefix) in headless chromium
# (tests/webui/e2e.js prefix): opened at the address nnictl prints (the prefix without
# its slash), overview numbers against the database, the trials page, a trial's stdout,
# the log panel, All experiments, a reload; every request stays inside the prefix, no
# console errors. Screenshots:
# <ctest's working dir>/webui-artifacts/61-webui-prefix/*.png (WEBUI_ARTIFACTS overrides).
. "$(dirname "$0")/lib.sh"

webui_artifacts   # sets ART
webui_setup   # sets UI; chromium, node and playwright-core

port=$(free_port)
metrics_experiment "$WORK/exp" 2 4 5
nnictl create --config "$WORK/exp/config.yml" --port "$port" --url_prefix ui/exp1 > "$WORK/create.out" ||
    { cat "$WORK/create.out"; fail "create with --url_prefix"; }
id=$(exp_id_of "$WORK/create.out")
[ -n "$id" ] || fail "no experiment id printed"
grep -q "http://127.0.0.1:$port/ui/exp1" "$WORK/create.out" || fail "the printed address has no prefix"
wait_status "$id" DONE 120

# outside the prefix nothing is served, the UI included
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/oview")
[ "$code" = 404 ] || fail "GET /oview outside the prefix gave $code"
loc=$(curl -s -D - -o /dev/null "http://127.0.0.1:$port/ui/exp1" | sed -n 's/^[Ll]ocation: *//p' | tr -d '\r')
[ "$loc" = /ui/exp1/ ] || fail "the prefix without its slash redirects to '$loc'"

node "$UI/e2e.js" prefix "http://127.0.0.1:$port/ui/exp1/" "$DB" "$id" "$ART" ||
    fail "browser test (prefix) failed; screenshots in $ART"
pass "the web UI under /ui/exp1 in chromium"
nnictl stop "$id" > /dev/null
assert_no_leftovers

#!/usr/bin/env bash
# bench/webui_load: the web UI over a large history. Builds an experiment of N trials
# x M intermediate metrics (plus a final one for each SUCCEEDED trial) directly with
# SQL on the real schema (as bench/history_api.sh does), serves it with `nnictl view`,
# and loads the UI in headless Debian chromium (playwright-core, bench/webui_load.js):
# time from navigation to the overview (with its chart) rendered, and to the trials
# page's first table page (with its chart) rendered, cold (empty cache) and warm
# (files revalidated), and the bytes transferred for each first render.
# Target: <= 1 s from navigation to the overview and to the first table page.
#   usage: bench/webui_load.sh [BUILD_DIR] (default build)   env: N=100000 M=20 RUNS=5
. "$(dirname "$0")/lib/history_db.sh" "$@"
RUNS=${RUNS:-5}
history_bench webui_load
UI=$SRC/tests/webui
if [ ! -f "$UI/node_modules/playwright-core/package.json" ]; then
    (cd "$UI" && npm ci --no-audit --no-fund --loglevel=error)
fi

"$BUILD/nnictl" view "$id" --port "$port" > /dev/null
echo "webui_load: load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (wall times scale with it)"
node "$SRC/bench/webui_load.js" "http://127.0.0.1:$port/" "$RUNS" "$DB"
# the server's side of a first render, uncached (a bucket count no page asks for)
api=$(sqlite3 -cmd ".timeout 10000" "$DB" "SELECT api_pid FROM experiment WHERE id='$id'")
cpu() { awk '{ print $14 + $15 }' "/proc/$api/stat"; }
B="http://127.0.0.1:$port/api/v1/nni"
for path in "webui/overview" "webui/trials?limit=50" "webui/trials?sort=metric&order=desc&limit=50" \
            "webui/charts?buckets=499" "webui/params?n=999"; do
    c0=$(cpu)
    t=$(curl -s -o /dev/null -w '%{time_total} %{size_download}' "$B/$path")
    c1=$(cpu)
    awk -v p="$path" -v t="$t" -v c="$((c1 - c0))" -v hz="$(getconf CLK_TCK)" \
        'BEGIN { split(t, a, " "); printf "webui_load: GET %-45s %6.0f ms wall, %4.0f ms api CPU, %6.1f kB\n", p, a[1] * 1000, c * 1000 / hz, a[2] / 1024 }'
done

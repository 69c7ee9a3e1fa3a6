#!/bin/bash
# The shape docs/architecture.md promises ("Layout and include rules"), checked on the
# sources so that it cannot drift: api/ and cli/ call in layers with no circle between
# their files (a subsystem with one private header, the dispatcher and the trial
# channel, counts as one node), and no function of the daemons, the CLI and the tuners
# is over 80 lines. Usage: layering.sh SRC_DIR
set -u
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$src" || exit 2
rc=0
python3 scripts/callgraph.py --group dispatcher=dispatcher.c,disp_*.c \
    --group channel=channel.c,chan_http.c api > /tmp/layering.$$ 2>&1 ||
    { echo "api/ has a circle between its layers:"; grep -i cycle /tmp/layering.$$; rc=1; }
python3 scripts/callgraph.py cli > /tmp/layering.$$ 2>&1 ||
    { echo "cli/ has a circle between its files:"; grep -i cycle /tmp/layering.$$; rc=1; }
rm -f /tmp/layering.$$
long=$(python3 scripts/longfn.py api cli workers common supervise schema queue config tuners) ||
    { echo "functions over 80 lines (lines, where, name):"; echo "$long"; rc=1; }
[ "$rc" = 0 ] && echo "layering: api/ and cli/ without circles, no function over 80 lines"
exit "$rc"

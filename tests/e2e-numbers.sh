#!/usr/bin/env bash
# tests/README.md's end-to-end table names every tests/e2e/NN-*.sh: by its number, or by
# its whole name where tests share a number. Usage: e2e-numbers.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: e2e-numbers.sh SOURCE_DIR}
table=$(sed -n '/^## End-to-end numbers/,/^## End-to-end helpers/p' "$src/tests/README.md")
[ -n "$table" ] || { echo "tests/README.md has no '## End-to-end numbers' section"; exit 1; }
rc=0 n=0
for f in "$src"/tests/e2e/[0-9]*.sh; do
    name=$(basename "$f" .sh)
    num=${name%%-*}
    n=$((n + 1))
    same=("$src"/tests/e2e/"$num"-*.sh)
    if [ "${#same[@]}" -gt 1 ]; then
        grep -qF -- "$name" <<< "$table" ||
            { echo "tests/README.md: $name shares number $num but is not named in the end-to-end table"; rc=1; }
    elif ! grep -qE -- "(^|[^0-9a-z-])$num([^0-9a-z-]|\$)" <<< "$table"; then
        echo "tests/README.md: $name: number $num is not in the end-to-end table"
        rc=1
    fi
done
[ "$rc" = 1 ] || echo "the end-to-end table names all $n tests"
exit "$rc"

#!/bin/bash
# A platform is one file behind one table (issue 15, docs/architecture.md "Adding a
# platform"): its name, as a C string literal ("remote", or "local:..."), appears only in
# its own files: workers/<family>/<platform>.c and workers/<family>/<platform>_*.c (a
# family's folder: workers/kube/, workers/rest/; their skeletons name none of them), or
# the folder of its own, workers/<platform>/ (remote, local, slurm, hybrid); in the
# registry (workers/platforms.c), in config/ (the schema) and in tests/. Everything else asks the table (platform_find, struct
# platform_ops). Usage: platform-literals.sh SRC_DIR
set -u
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$src" || exit 2

# Known exceptions of the first slice of issue 15, to be moved by its later slices:
# a module below workers/ (schema/, api/ link no worker) or a message of its own.
#   file:name
known=(
)

own_files() { # the files that may name platform $1
    echo "workers/*/$1.c workers/*/$1_*.c workers/*/$1.h workers/$1/*"
}

fail=0
# every platform of the one list (common/platform_list.h's X(id, ...) lines), and hybrid
names=$(sed -n 's/^ *X(\([a-z0-9_]*\),.*/\1/p' common/platform_list.h)
[ "$(echo "$names" | wc -w)" -ge 10 ] || { echo "cannot read the platforms from common/platform_list.h"; exit 2; }
for name in $names hybrid; do
    while IFS= read -r hit; do
        file=${hit%%:*}
        case $file in
        config/* | tests/* | workers/platforms.c | build*/* | shared/*) continue ;;
        esac
        allowed=0
        for f in $(own_files "$name"); do
            # shellcheck disable=SC2053 # a glob on purpose
            [[ $file == $f ]] && allowed=1
        done
        for k in "${known[@]}"; do
            [[ $k == "$file:$name" ]] && allowed=1
        done
        if [ $allowed = 0 ]; then
            echo "platform name \"$name\" outside its platform's file (ask the registry, workers/platforms.c): $hit"
            fail=1
        fi
    done < <(grep -rnE --include='*.c' --include='*.h' --exclude-dir='build*' --exclude-dir=.git \
        "\"$name(\"|:)" . | sed 's|^\./||')
done
# an exception that no longer applies is removed from the list
for k in "${known[@]}"; do
    if ! grep -qE "\"${k#*:}(\"|:)" "${k%%:*}" 2>/dev/null; then
        echo "known exception $k no longer needed: remove it from $0"
        fail=1
    fi
done
[ $fail = 0 ] && echo "platform name literals: only in their platforms' files, the registry, config/ and tests/"
exit $fail

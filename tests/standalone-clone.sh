#!/usr/bin/env bash
# The repository stands alone: a clone of the checkout's committed state, in an empty
# directory with nothing beside it, configures, and nothing its build or its tests are
# told to read lies outside the clone (no folder beside it, no path back into the checkout).
# Only a configure: the clone is not built.
#   usage: standalone-clone.sh SOURCE_DIR
set -euo pipefail
src=$(cd "$1" && pwd -P)
fail() { echo "FAIL: $*" >&2; exit 1; }

git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || { echo "not a git checkout: skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/trialq-standalone-XXXXXX")
tmp=$(cd "$tmp" && pwd -P)
trap 'rm -rf "$tmp"' EXIT
clone=$tmp/trialq
git clone --quiet --no-hardlinks "$src" "$clone"
echo "cloned $(git -C "$clone" rev-parse --short HEAD) into $clone"

# the sources name nothing beside the repository (the patterns do not match themselves)
if git -C "$clone" grep -nE '[.][.]/shared|TRIALQ_SHARE[D]' -- .; then
    fail "the sources above reach outside the repository"
fi

cmake -S "$clone" -B "$clone/build" -DCMAKE_BUILD_TYPE=Debug > "$tmp/configure.log" 2>&1 ||
    { cat "$tmp/configure.log"; fail "the clone does not configure"; }

# every absolute path in what ctest runs (commands, environments, working directories),
# in how each target is compiled and linked (flags, defines such as the data paths the
# programs are built with, build rules) and in the cache is inside the clone or a
# system directory
generated=("$clone/build/CMakeCache.txt")
while IFS= read -r f; do generated+=("$f"); done < <(find "$clone/build" \( -name CTestTestfile.cmake \
    -o -name flags.make -o -name link.txt -o -name build.make \) -type f)
[ "${#generated[@]}" -ge 20 ] || fail "the configure generated too few files: ${generated[*]}"
grep -q "add_test" "${generated[@]}" || fail "the clone registers no test" # (grep -c | grep -q: a SIGPIPE under pipefail)
bad=0
while IFS= read -r p; do
    real=$(realpath -m "$p")
    case $real in
    "$clone" | "$clone"/* | /usr | /usr/* | /bin/* | /sbin/* | /lib/* | /lib64/* | /etc/* | /dev/null) ;;
    *) echo "outside the clone: $p" >&2; bad=1 ;;
    esac
done < <(grep -hvE '^[[:space:]]*(//|#)' "${generated[@]}" | grep -oE '(^|[ ="$;:(])/[A-Za-z0-9_.+/-]+' |
    sed -E 's/^[^/]*//' | sort -u)
[ "$bad" = 0 ] || fail "the build or the tests read outside the clone (paths above)"
if [ "${clone#"$src"/}" = "$clone" ] && grep -lF "$src" "${generated[@]}"; then
    fail "the files above name the original checkout $src"
fi
echo "ok: the clone configures, and its build and tests name nothing outside it"

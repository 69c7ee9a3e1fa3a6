# steps.sh: one line per step for quickstart.sh and test.sh, the step's own output
# appended to $STEP_LOG. Sourced; the caller sets STEP_LOG.
#   step LABEL CMD...      runs CMD; "LABEL ... done (12s)"
#   step_build LABEL DIR   cmake --build DIR; "LABEL ... 127 files compiled (95s)"
# A failed step prints the end of the log (40 lines) and its path, and exits 1.

# on a terminal the line is written while the step runs and completed in place
if [ -t 1 ]; then STEP_CR=$'\r\033[K'; else STEP_CR=; fi
step_show() {
    if [ -n "$STEP_CR" ]; then printf '%s%s' "$STEP_CR" "$1"; fi
}

step_fail() {
    printf '%s%s ... FAILED after %ss; the end of %s:\n' "$STEP_CR" "$1" "$2" "$STEP_LOG"
    tail -n 40 "$STEP_LOG" | sed 's/^/    /'
    echo "the whole log: $STEP_LOG"
    exit 1
}

step() {
    local label=$1 t0=$SECONDS
    shift
    printf '\n== %s: %s\n' "$label" "$*" >>"$STEP_LOG"
    step_show "$label ..."
    "$@" >>"$STEP_LOG" 2>&1 </dev/null || step_fail "$label" $((SECONDS - t0))
    printf '%s%s ... done (%ss)\n' "$STEP_CR" "$label" $((SECONDS - t0))
}

# the Makefile generator's "[ 45%] Building C object ..." lines give the count
step_build() {
    local label=$1 dir=$2 t0=$SECONDS n=0 ok=0 line
    printf '\n== %s: cmake --build %s\n' "$label" "$dir" >>"$STEP_LOG"
    step_show "$label ..."
    while IFS= read -r line; do
        printf '%s\n' "$line" >>"$STEP_LOG"
        case $line in
        *"Building C object"*)
            n=$((n + 1))
            step_show "$label ... ${line%%]*}] $n files compiled"
            ;;
        "step_build: exit 0") ok=1 ;;
        esac
    done < <(cmake --build "$dir" -j"$(nproc)" 2>&1 </dev/null && echo "step_build: exit 0" || echo "step_build: exit $?")
    [ "$ok" = 1 ] || step_fail "$label" $((SECONDS - t0))
    if [ "$n" = 0 ]; then
        printf '%s%s ... up to date (%ss)\n' "$STEP_CR" "$label" $((SECONDS - t0))
    else
        printf '%s%s ... %d files compiled (%ss)\n' "$STEP_CR" "$label" "$n" $((SECONDS - t0))
    fi
}

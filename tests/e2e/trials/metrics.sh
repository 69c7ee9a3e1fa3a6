#!/bin/sh
# A trial in NNI's file protocol, without Python: reads parameter.cfg, writes
# TRIAL_STEPS intermediate metrics and one final metric to $NNI_SYS_DIR/.nni/metrics
# (ME + 6-digit length + JSON + newline), and keeps its own list of what it wrote in
# $NNI_SYS_DIR/written.log so that a test can compare it with the database. With
# TRIAL_SIDE set (a directory outside the home), it also appends "start", "metric <type>
# <seq> <value>" after each record written and "end" to TRIAL_SIDE/<trial id>.
set -e
side=${TRIAL_SIDE:+$TRIAL_SIDE/$NNI_TRIAL_JOB_ID}
[ -z "$side" ] || echo "start $$" >> "$side"
cfg="$NNI_SYS_DIR/parameter.cfg"
pid=$(sed -n 's/.*"parameter_id":\([0-9]*\).*/\1/p' "$cfg")
x=$(sed -n 's/.*"x":\([-0-9.e+]*\).*/\1/p' "$cfg")
mkdir -p "$NNI_SYS_DIR/.nni"
emit() {
    rec=$(printf '{"parameter_id":%s,"trial_job_id":"%s","type":"%s","sequence":%s,"value":"%s"}' \
        "$pid" "$NNI_TRIAL_JOB_ID" "$1" "$2" "$3")
    printf 'ME%06d%s\n' "$((${#rec} + 1))" "$rec" >> "$NNI_SYS_DIR/.nni/metrics"
    echo "$1 $2 $3${4:+ $4}" >> "$NNI_SYS_DIR/written.log"
    [ -z "$side" ] || echo "metric $1 $2 $3" >> "$side"
}
# With TRIAL_RACE set (a seed; e2e/26b), the trial's end and its metrics come in one of
# eight orders, chosen from its sequence number and the seed; "late" in written.log
# marks a record written after the trial's command ended:
#   0  two intermediate results, the final one, exit 0 at once
#   1  only the final result, exit 0
#   2  no result at all, exit 0 (an end without a metric)
#   3  the final result, then exit 3 (FAILED with a metric)
#   4  the command ends first; a process it left behind in a session of its own (so that
#      the trial's end does not take it) writes the final result 0-200 ms after the end
#      (the end before the final metric, NNI issue 5689)
#   5  intermediate results every 0.1 s for a while, then the final one: slow enough for
#      a kill or an assessor to come first
#   6  the final result, then 0.15 s before exit 0: a kill may land between them
#   7  the final result, then kill -9 of itself (FAILED by a signal, with a metric)
if [ -n "${TRIAL_RACE:-}" ]; then
    v=$(sed -n 's/.*"q":\([-0-9.e+]*\).*/\1/p' "$cfg")
    if [ "${1:-}" = late ]; then
        sleep "$(echo 0 0.01 0.05 0.2 | cut -d' ' -f$((NNI_TRIAL_SEQ_ID % 4 + 1)))"
        emit FINAL 0 "$v" late
        exit 0
    fi
    case $(((NNI_TRIAL_SEQ_ID * 7919 / 13 + TRIAL_RACE) % 8)) in
    0) emit PERIODICAL 0 "$v"; emit PERIODICAL 1 "$v"; emit FINAL 0 "$v" ;;
    1) emit FINAL 0 "$v" ;;
    2) ;;
    3) emit FINAL 0 "$v"; exit 3 ;;
    4) setsid sh "$0" late < /dev/null > /dev/null 2>&1 & exit 0 ;;
    5) i=0; while [ $i -lt 6 ]; do emit PERIODICAL $i "$v"; sleep 0.1; i=$((i + 1)); done; emit FINAL 0 "$v" ;;
    6) emit FINAL 0 "$v"; sleep 0.15 ;;
    7) emit FINAL 0 "$v"; kill -9 $$ ;;
    esac
    exit 0
fi
steps=${TRIAL_STEPS:-3}
i=0
while [ "$i" -lt "$steps" ]; do
    emit PERIODICAL "$i" "$x.$i"
    [ -n "${TRIAL_SLEEP:-}" ] && sleep "$TRIAL_SLEEP"
    # TRIAL_HOLD="SECONDS SEQ...": the trials of those sequences wait SECONDS after their
    # first result (for a kill or a stop to end them; e2e/lib/fault_sweep.sh)
    if [ "$i" = 0 ] && [ -n "${TRIAL_HOLD:-}" ]; then
        for s in ${TRIAL_HOLD#* }; do [ "$s" != "$NNI_TRIAL_SEQ_ID" ] || sleep "${TRIAL_HOLD%% *}"; done
    fi
    i=$((i + 1))
done
emit FINAL 0 "$x"
[ -z "$side" ] || echo "end" >> "$side"
echo "trial $NNI_TRIAL_JOB_ID seq $NNI_TRIAL_SEQ_ID x=$x done"

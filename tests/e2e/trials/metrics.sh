#!/bin/sh
# A trial in NNI's file protocol, without Python: reads parameter.cfg, writes
# TRIAL_STEPS intermediate metrics and one final metric to $NNI_SYS_DIR/.nni/metrics
# (ME + 6-digit length + JSON + newline), and keeps its own list of what it wrote in
# $NNI_SYS_DIR/written.log so that a test can compare it with the database.
set -e
cfg="$NNI_SYS_DIR/parameter.cfg"
pid=$(sed -n 's/.*"parameter_id":\([0-9]*\).*/\1/p' "$cfg")
x=$(sed -n 's/.*"x":\([-0-9.e+]*\).*/\1/p' "$cfg")
mkdir -p "$NNI_SYS_DIR/.nni"
emit() {
    rec=$(printf '{"parameter_id":%s,"trial_job_id":"%s","type":"%s","sequence":%s,"value":"%s"}' \
        "$pid" "$NNI_TRIAL_JOB_ID" "$1" "$2" "$3")
    printf 'ME%06d%s\n' "$((${#rec} + 1))" "$rec" >> "$NNI_SYS_DIR/.nni/metrics"
    echo "$1 $2 $3" >> "$NNI_SYS_DIR/written.log"
}
steps=${TRIAL_STEPS:-3}
i=0
while [ "$i" -lt "$steps" ]; do
    emit PERIODICAL "$i" "$x.$i"
    [ -n "${TRIAL_SLEEP:-}" ] && sleep "$TRIAL_SLEEP"
    i=$((i + 1))
done
emit FINAL 0 "$x"
echo "trial $NNI_TRIAL_JOB_ID seq $NNI_TRIAL_SEQ_ID x=$x done"

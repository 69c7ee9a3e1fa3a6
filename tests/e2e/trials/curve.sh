#!/bin/sh
# Reports the parameter q as every intermediate result (STEPS of them, STEP_SLEEP apart)
# and as the final result, through NNISDK_MEb stdout lines.
set -e
cfg="$NNI_SYS_DIR/parameter.cfg"
pid=$(sed -n 's/.*"parameter_id":\([0-9]*\).*/\1/p' "$cfg")
q=$(sed -n 's/.*"q":\([-0-9.]*\).*/\1/p' "$cfg")
line() { printf "NNISDK_MEb'{\"parameter_id\":%s,\"trial_job_id\":\"%s\",\"type\":\"%s\",\"sequence\":%s,\"value\":\"%s\"}'\n" \
    "$pid" "$NNI_TRIAL_JOB_ID" "$1" "$2" "$3"; }
i=0
while [ "$i" -lt "${STEPS:-6}" ]; do
    line PERIODICAL "$i" "$q"
    sleep "${STEP_SLEEP:-0.3}"
    i=$((i + 1))
done
line FINAL 0 "$q"

#!/bin/sh
# A trial whose behaviour the test chooses by its parameter "mode":
#   ok      report through stdout lines (NNISDK_MEb'...') and exit 0
#   fail    report one intermediate metric, then exit 3
#   slow    sleep 30 s (to be killed: maxTrialDuration, nnictl trial kill, reboot)
#   crash   kill itself with SIGSEGV
#   nonl    report its final metric on a last stdout line without a newline, exit 0
set -e
cfg="$NNI_SYS_DIR/parameter.cfg"
pid=$(sed -n 's/.*"parameter_id":\([0-9]*\).*/\1/p' "$cfg")
mode=$(sed -n 's/.*"mode":"\([a-z]*\)".*/\1/p' "$cfg")
line() { printf "NNISDK_MEb'{\"parameter_id\":%s,\"trial_job_id\":\"%s\",\"type\":\"%s\",\"sequence\":%s,\"value\":\"%s\"}'\n" \
    "$pid" "$NNI_TRIAL_JOB_ID" "$1" "$2" "$3"; }
echo "mode $mode seq $NNI_TRIAL_SEQ_ID"
case $mode in
ok)    line PERIODICAL 0 0.25; echo "some other output"; line FINAL 0 0.5 ;;
fail)  line PERIODICAL 0 0.1; echo "going to fail" >&2; exit 3 ;;
slow)  echo "started" > "$NNI_SYS_DIR/started"; sleep 30; line FINAL 0 1 ;;
crash) kill -SEGV $$ ;;
nonl)  line FINAL 0 0.75 | tr -d '\n' ;;
esac

# lib/slurm.sh: a real Slurm cluster (Debian's slurmctld, slurmd, munge) on this host for
# the Slurm tests (90-99). Source after lib.sh. Everything lives under $WORK/slurm: its own
# munged (socket, key, pid), one slurmctld and SLURM_NODE_COUNT slurmd "nodes" (n1, n2, ...)
# on loopback, each with its own port, spool and log; a unique ClusterName; SLURM_CONF
# exported for sbatch, squeue, scancel and scontrol.
#
# The cluster, as the tests rely on it:
#   partition tq (default): the nodes, SLURM_CPUS_PER_NODE CPUs each (default 1), so that
#     jobs beyond SLURM_NODE_COUNT * SLURM_CPUS_PER_NODE wait (PENDING, reason Resources)
#   GRES gpu:2 per node, backed by symlinks to /dev/null (AutoDetect=off): jobs with
#     --gres=gpu:N get CUDA_VISIBLE_DEVICES and count GPUs in scheduling
#   no accounting daemon: JobCompType=jobcomp/filetxt logs each finished job in
#     $SLURM_DIR/jobcomp.log; `squeue -t all --json` keeps finished jobs for MinJobAge
#   ReturnToService=1, proctrack/linuxproc, task/none (no cgroup setup), select/cons_tres
#     with CR_CPU
# slurm_cluster_stop (also run on exit) ends the daemons and every job step by pid.

SLURM_NODE_COUNT=${SLURM_NODE_COUNT:-3}
SLURM_CPUS_PER_NODE=${SLURM_CPUS_PER_NODE:-1}
SLURM_DIR=
declare -A SLURM_PID

# slurm_need: root and the packages, else the test is skipped (ctest's skip code 77)
slurm_need() {
    [ "$(id -u)" = 0 ] || { echo "SKIP: needs root to run slurmctld, slurmd and munged"; exit 77; }
    local b
    for b in /usr/sbin/munged /usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/sbatch /usr/bin/squeue; do
        [ -x "$b" ] || { echo "SKIP: $b is missing (scripts/install-deps.sh installs slurmctld slurmd slurm-client munge)"; exit 77; }
    done
}

# slurm_wait_port PORT WHAT: until something listens on 127.0.0.1:PORT
slurm_wait_port() {
    local tries=0
    while port_is_free "$1"; do
        tries=$((tries + 1))
        [ "$tries" -le 100 ] || fail "$2 did not listen on $1 (logs in $SLURM_DIR/log)"
        sleep 0.1
    done
}

# slurm_cluster_start: starts munged, slurmctld and the nodes; returns when every node is
# idle. Sets SLURM_DIR, SLURM_CLUSTER, SLURM_PID[munged|ctld|n1...], exports SLURM_CONF.
slurm_cluster_start() {
    slurm_need
    SLURM_DIR="$WORK/slurm"
    SLURM_CLUSTER="tq$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
    local d=$SLURM_DIR n ctld_port
    mkdir -p "$d/munge" "$d/state" "$d/log" "$d/gpu"
    chmod 700 "$d/munge"
    # munged: a key of its own, its socket under the cluster's dir
    dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$d/munge/munge.key"
    /usr/sbin/munged -F --force --socket="$d/munge/socket" --key-file="$d/munge/munge.key" \
        --pid-file="$d/munge/munged.pid" --log-file="$d/log/munged.log" \
        --seed-file="$d/munge/seed" > "$d/log/munged.out" 2>&1 &
    SLURM_PID[munged]=$!
    for _ in $(seq 1 100); do [ -S "$d/munge/socket" ] && break; sleep 0.05; done
    [ -S "$d/munge/socket" ] || { cat "$d/log/munged.out" "$d/log/munged.log" >&2; fail "munged did not start"; }

    # a port for slurmctld and one per slurmd, all distinct
    local ports=() p
    while [ "${#ports[@]}" -le "$SLURM_NODE_COUNT" ]; do
        p=$(free_port)
        [[ " ${ports[*]} " == *" $p "* ]] || ports+=("$p")
    done
    ctld_port=${ports[0]}
    cat > "$d/slurm.conf" <<CONF
ClusterName=$SLURM_CLUSTER
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/socket
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd-%n.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
GresTypes=gpu
JobCompType=jobcomp/filetxt
JobCompLoc=$d/jobcomp.log
ReturnToService=1
MinJobAge=600
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
CONF
    [ -z "${SLURM_CONF_EXTRA:-}" ] || echo "$SLURM_CONF_EXTRA" >> "$d/slurm.conf"
    : > "$d/gres.conf"
    for n in $(seq 1 "$SLURM_NODE_COUNT"); do
        mkdir -p "$d/spool/n$n"
        ln -s /dev/null "$d/gpu/n$n-nvidia0"
        ln -s /dev/null "$d/gpu/n$n-nvidia1"
        echo "NodeName=n$n Name=gpu File=$d/gpu/n$n-nvidia[0-1]" >> "$d/gres.conf"
        echo "NodeName=n$n NodeHostname=localhost NodeAddr=127.0.0.1 Port=${ports[$n]} CPUs=$SLURM_CPUS_PER_NODE RealMemory=1000 Gres=gpu:2 State=UNKNOWN" >> "$d/slurm.conf"
    done
    echo "AutoDetect=off" | cat - "$d/gres.conf" > "$d/gres.conf.tmp" && mv "$d/gres.conf.tmp" "$d/gres.conf"
    echo "PartitionName=tq Nodes=n[1-$SLURM_NODE_COUNT] Default=YES MaxTime=INFINITE State=UP" >> "$d/slurm.conf"
    export SLURM_CONF="$d/slurm.conf"

    # the daemons carry TQ_SLURM_DAEMON in their environment: what they fork (job steps,
    # a slurmd child that retries a job's completion while slurmctld is gone) is found by it
    SLURM_CTLD_PORT=$ctld_port
    slurm_ctld_start
    for n in $(seq 1 "$SLURM_NODE_COUNT"); do
        TQ_SLURM_DAEMON=$d /usr/sbin/slurmd -D -N "n$n" -f "$SLURM_CONF" > "$d/log/slurmd-n$n.out" 2>&1 &
        SLURM_PID[n$n]=$!
    done
    slurm_wait_idle "$SLURM_NODE_COUNT" 60
}

# slurm_ctld_start: starts slurmctld (again: its jobs come back from its state dir)
slurm_ctld_start() {
    TQ_SLURM_DAEMON=$SLURM_DIR /usr/sbin/slurmctld -D -i -f "$SLURM_CONF" >> "$SLURM_DIR/log/slurmctld.out" 2>&1 &
    SLURM_PID[ctld]=$!
    slurm_wait_port "$SLURM_CTLD_PORT" slurmctld
}

# slurm_ctld_stop: slurmctld ends (SIGTERM: it saves its state); the nodes and their jobs
# live on
slurm_ctld_stop() {
    kill "${SLURM_PID[ctld]}"
    wait "${SLURM_PID[ctld]}" 2>/dev/null || true
}

# slurm_wait_idle COUNT SECONDS: until COUNT nodes are idle
slurm_wait_idle() {
    local idle=0
    for _ in $(seq 1 $(($2 * 10))); do
        idle=$(sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | grep -c . || true)
        [ "$idle" -ge "$1" ] && return 0
        sleep 0.1
    done
    sinfo -N >&2 || true
    tail -n 20 "$SLURM_DIR"/log/*.log >&2 || true
    fail "only $idle of $1 Slurm nodes became idle in $2 s"
}

# the processes of this cluster left beside the recorded daemons: what the daemons forked
# (TQ_SLURM_DAEMON in the environment) and the jobs' processes (SLURM_CONF of this
# cluster in their environment, in a session of their own: not this test's shell or its
# helpers); their command lines do not name the cluster
slurm_job_pids() {
    local p mysid sid
    [ -n "$SLURM_DIR" ] || return 0
    mysid=$(ps -o sid= -p $$ | tr -d ' ')
    for p in /proc/[0-9]*; do
        if grep -qsz -e "^TQ_SLURM_DAEMON=$SLURM_DIR\$" "$p/environ" 2>/dev/null; then
            echo "${p#/proc/}"
        elif grep -qsz -e "^SLURM_CONF=$SLURM_DIR/slurm.conf\$" "$p/environ" 2>/dev/null; then
            sid=$(ps -o sid= -p "${p#/proc/}" 2>/dev/null | tr -d ' ')
            [ -n "$sid" ] && [ "$sid" != "$mysid" ] && echo "${p#/proc/}"
        fi
    done
    return 0
}

# slurm_cluster_stop: cancels every job, stops the daemons by their recorded pids
# (SIGKILL after 5 s) and kills what is left of the cluster (idempotent)
slurm_cluster_stop() {
    [ -n "$SLURM_DIR" ] || return 0
    local k pids live
    scancel --full --signal=KILL -u root > /dev/null 2>&1 || true
    for k in "${!SLURM_PID[@]}"; do
        [ "$k" = munged ] || kill "${SLURM_PID[$k]}" 2>/dev/null || true
    done
    for _ in $(seq 1 50); do
        live=
        for k in "${!SLURM_PID[@]}"; do
            [ "$k" = munged ] || ! kill -0 "${SLURM_PID[$k]}" 2>/dev/null || live=1
        done
        [ -z "$live" ] && break
        sleep 0.1
    done
    for k in "${!SLURM_PID[@]}"; do
        [ "$k" = munged ] || kill -9 "${SLURM_PID[$k]}" 2>/dev/null || true
        [ "$k" = munged ] || wait "${SLURM_PID[$k]}" 2>/dev/null || true
    done
    for _ in 1 2 3 4 5; do
        pids=$(slurm_job_pids)
        [ -z "$pids" ] && break
        kill -9 $pids 2>/dev/null || true
        sleep 0.2
    done
    kill "${SLURM_PID[munged]}" 2>/dev/null || true
    wait "${SLURM_PID[munged]}" 2>/dev/null || true
    SLURM_PID=()
    SLURM_DIR=
}

slurm_on_exit() {
    local rc=$?
    if [ "$rc" -ne 0 ] && [ -n "$SLURM_DIR" ]; then
        for f in "$SLURM_DIR"/log/*.log; do
            [ -f "$f" ] && { echo "== $f" >&2; tail -n 15 "$f" >&2; }
        done
    fi
    nnictl stop --all >/dev/null 2>&1 || true
    slurm_cluster_stop
    set +e # as remote_on_exit: cleanup reads the status from $?
    (exit "$rc")
    cleanup
}
trap slurm_on_exit EXIT

# slurm_job_field JOBID FIELD: one field of the job as `squeue -t all --json` gives it
# (a JSON value, printed compactly; squeue --json lists every job whatever -j says)
slurm_job_field() {
    squeue -t all --json | $PY -c '
import json, sys
jobs = [j for j in json.load(sys.stdin)["jobs"] if j["job_id"] == int(sys.argv[1])]
print(json.dumps(jobs[0][sys.argv[2]]) if jobs else "")' "$1" "$2"
}

# slurm_wait_state JOBID STATE SECONDS
slurm_wait_state() {
    local got=
    for _ in $(seq 1 $(($3 * 10))); do
        got=$(squeue -h -t all -j "$1" -o %T 2>/dev/null || true)
        [ "$got" = "$2" ] && return 0
        sleep 0.1
    done
    squeue -t all -j "$1" >&2 || true
    fail "job $1 is '$got' after $3 s, wanted $2"
}

# slurm_exact_metrics ID [STATUS]: each trial's metric rows (of the trials in STATUS,
# default all) are exactly what it wrote (written.log in its dir, trials/metrics.sh)
slurm_exact_metrics() {
    local tid dir want got
    for tid in $(sql "SELECT id FROM trial WHERE experiment_id='$1' AND status LIKE '${2:-%}'"); do
        dir=$(sql "SELECT trial_dir FROM trial WHERE id='$tid'")
        want=$(sort "$dir/written.log")
        got=$(sql "SELECT type || ' ' || sequence || ' ' || value FROM metric WHERE trial_id='$tid'" | sort)
        [ -n "$want" ] && [ "$want" = "$got" ] || { echo "want: $want"; echo "got: $got"; fail "metrics of $tid differ"; }
    done
}

# slurm_one_job_each ID N: squeue (MinJobAge 600) lists N jobs of the experiment, one per
# trial (no name twice), and slurm_exact_metrics
slurm_one_job_each() {
    local jobs names
    jobs=$(squeue -h -t all -o %j | grep -c "^nni-$1-")
    names=$(squeue -h -t all -o %j | grep "^nni-$1-" | sort -u | wc -l)
    [ "$jobs" = "$2" ] && [ "$names" = "$2" ] || fail "$jobs Slurm jobs ($names names) for $2 trials"
    slurm_exact_metrics "$1"
}

# slurm_login_node: the SSH mode's login node (source lib/remote.sh first; after
# slurm_cluster_start): sshd 1 on loopback whose sessions get SLURM_CONF (and PATH, when
# SLURM_LOGIN_PATH is set), the non-root user tqremote1 logging in with $WORK/id_ed25519,
# its host key in $WORK/known_hosts, $WORK/shared owned by that user. Sets SLURM_LOGIN_TS:
# the trainingService lines (sharedDirectory, knownHostsFile, loginNode), a newline first;
# SLURM_LOGIN_AUTH=password: loginNode logs in with the user's password instead of the key.
slurm_login_node() {
    remote_need_root
    chmod 755 "$SLURM_DIR/munge" # the munge socket, for the login user (the key stays 0400)
    remote_user tqremote1
    remote_keys
    # kept: `remote_sshd 1` brings the login node back (after remote_partition) as it was
    REMOTE_SSHD_EXTRA="SetEnv SLURM_CONF=$SLURM_CONF${SLURM_LOGIN_PATH:+ PATH=$SLURM_LOGIN_PATH}"
    remote_sshd 1
    remote_known_host 1 > "$WORK/known_hosts"
    mkdir -p "$WORK/shared"
    chown tqremote1 "$WORK/shared"
    SLURM_LOGIN_TS=$'\n  sharedDirectory: '"$WORK/shared"$'\n  knownHostsFile: '"$WORK/known_hosts"
    local auth="sshKeyFile: $WORK/id_ed25519"
    [ "${SLURM_LOGIN_AUTH:-key}" = key ] || auth="password: $REMOTE_PASS"
    SLURM_LOGIN_TS+=$'\n  loginNode: {host: 127.0.0.1, port: '"${SSHD_PORT[1]}"', user: tqremote1, '"$auth}"
}

# lib/remote.sh: real OpenSSH servers on loopback as the "machines" of the remote
# platform tests (55-59) and bench/remote_throughput.sh. Source after lib.sh.
# Each machine is one sshd on its own port with its own ed25519 host key; the accounts
# are non-root users created here (tqremote1, tqremote2: password and key login).

REMOTE_PASS=tq-remote-pass-1

remote_need_root() {
    [ "$(id -u)" = 0 ] || { echo "SKIP: needs root to run sshd and create users"; exit 0; }
    [ -x /usr/sbin/sshd ] || fail "openssh-server is not installed (scripts/install-deps.sh)"
}

# remote_user NAME: a non-root account with a password (idempotent)
remote_user() {
    id "$1" >/dev/null 2>&1 || useradd -m -s /bin/bash "$1" 2>/dev/null || id "$1" >/dev/null ||
        fail "cannot create user $1"
    echo "$1:$REMOTE_PASS" | chpasswd
}

# remote_keys: $WORK/id_ed25519 (client key, authorized for every test user),
# $WORK/id_rsa (an RSA key, also authorized: the server refuses its SHA-1 signature)
remote_keys() {
    ssh-keygen -q -t ed25519 -N '' -f "$WORK/id_ed25519" -C trialq-test
    ssh-keygen -q -t rsa -b 2048 -N '' -f "$WORK/id_rsa" -C trialq-test-rsa
    cat "$WORK/id_ed25519.pub" "$WORK/id_rsa.pub" > "$WORK/authorized_keys"
    chmod 644 "$WORK/authorized_keys"
    chmod 755 "$WORK"
}

# remote_sshd N: starts machine N (sshd on a free port); sets SSHD_PORT[N], SSHD_PID[N]
# (REMOTE_SSHD_EXTRA: more sshd_config lines, e.g. SetEnv for the Slurm login node)
declare -A SSHD_PORT SSHD_PID
remote_sshd() {
    local n=$1 port cfg
    mkdir -p /run/sshd
    port=${SSHD_PORT[$n]:-$(free_port)}
    cfg="$WORK/sshd-$n.conf"
    [ -f "$WORK/hostkey-$n" ] || ssh-keygen -q -t ed25519 -N '' -f "$WORK/hostkey-$n"
    cat > "$cfg" <<CFG
ListenAddress 127.0.0.1:$port
HostKey $WORK/hostkey-$n
PidFile none
AuthorizedKeysFile $WORK/authorized_keys
StrictModes no
UsePAM no
PasswordAuthentication yes
KbdInteractiveAuthentication no
PermitRootLogin no
MaxSessions 100
MaxStartups 100:30:200
Subsystem sftp internal-sftp
${REMOTE_SSHD_EXTRA:-}
CFG
    /usr/sbin/sshd -t -f "$cfg" || fail "sshd config $cfg"
    /usr/sbin/sshd -D -e -f "$cfg" >> "$WORK/sshd-$n.log" 2>&1 &
    SSHD_PID[$n]=$!
    SSHD_PORT[$n]=$port
    WAIT_STEP=0.05 wait_until 5 listens "$port" || fail "sshd $n did not listen on $port"
}

# listens PORT: something accepts connections on 127.0.0.1:PORT
listens() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# remote_machines: the common setup of the remote tests: root check, the two test
# users, the client keys, and machines 1 and 2 (sshd each)
remote_machines() {
    remote_need_root
    remote_user tqremote1
    remote_user tqremote2
    remote_keys
    remote_sshd 1
    remote_sshd 2
}

# the known_hosts line of machine N, as `ssh-keyscan -p PORT 127.0.0.1` would print it
remote_known_host() {
    echo "[127.0.0.1]:${SSHD_PORT[$1]} $(cut -d' ' -f1,2 "$WORK/hostkey-$1.pub")"
}

# descendants of a pid (the sshd listener's per-connection processes)
remote_descendants() {
    local p c
    for p in $(ps -o pid= --ppid "$1"); do
        echo "$p"
        remote_descendants "$p"
    done
}

# remote_drop_sessions N: the machine's SSH sessions end (its sshd processes only; the
# trials and runners, detached into their own sessions, live on as after a real drop)
remote_drop_sessions() {
    local p
    for p in $(remote_descendants "${SSHD_PID[$1]}"); do
        [ "$(cat /proc/$p/comm 2>/dev/null)" = sshd ] && kill -9 "$p" 2>/dev/null
    done
    return 0
}

# remote_machine_down N: the machine "dies": its sshd and every session end at once
remote_machine_down() {
    local pids
    pids="${SSHD_PID[$1]} $(remote_descendants "${SSHD_PID[$1]}")"
    kill -9 $pids 2>/dev/null || true
    wait "${SSHD_PID[$1]}" 2>/dev/null || true
}

# remote_partition N: the machine becomes unreachable but keeps running, as behind a
# network partition: its sshd listener and SSH sessions end (connections are refused from
# now on); the runners and trials, detached in their own sessions, live on. `remote_sshd N`
# brings it back on the same port with the same host key.
remote_partition() {
    local p sessions
    sessions=$(remote_descendants "${SSHD_PID[$1]}")
    # the listener first: a dropped session must not be reopened before the drop is complete
    kill -9 "${SSHD_PID[$1]}" 2>/dev/null || true
    wait "${SSHD_PID[$1]}" 2>/dev/null || true
    for p in $sessions; do
        [ "$(cat /proc/$p/comm 2>/dev/null)" != sshd ] || kill -9 "$p" 2>/dev/null || true
    done
    return 0
}

# processes of experiment ID on the "remote" hosts: runners (their command line names
# the experiment's work dir) and trials (NNI_EXP_ID in their environment)
remote_procs() {
    local id=$1 p
    for p in /proc/[0-9]*; do
        if grep -qsF "nni-experiments/$id/" "$p/cmdline" 2>/dev/null ||
           grep -qsz -e "^NNI_EXP_ID=$id\$" "$p/environ" 2>/dev/null; then
            case "$(stat -c %U "$p" 2>/dev/null)" in tqremote*) echo "${p#/proc/}" ;; esac
        fi
    done
    return 0
}

# remote_wait_no_procs ID SECONDS
remote_no_procs() { left=$(remote_procs "$1" | tr '\n' ' '); [ -z "${left// /}" ]; }
remote_wait_no_procs() {
    local left
    wait_until "$2" remote_no_procs "$1" && return 0
    ps -o pid,ppid,pgid,user,args -p "$(echo $left | tr ' ' ,)" >&2 || true
    fail "remote processes of $1 left behind: $left"
}

remote_cleanup() {
    local n
    for n in "${!SSHD_PID[@]}"; do
        kill "${SSHD_PID[$n]}" $(remote_descendants "${SSHD_PID[$n]}") 2>/dev/null || true
    done
    for n in ${REMOTE_EXPS:-}; do
        rm -rf "/home/tqremote1/nni-experiments/$n" "/home/tqremote2/nni-experiments/$n"
    done
}

remote_on_exit() {
    local rc=$?
    nnictl stop --all >/dev/null 2>&1 || true
    local n p
    for n in ${REMOTE_EXPS:-}; do
        for p in $(remote_procs "$n"); do kill -9 "$p" 2>/dev/null || true; done
    done
    remote_cleanup
    # cleanup reads the status from $?; without set +e a failing status would end this
    # trap right here (errexit): no logs shown, no sanitizer check, $WORK left behind
    set +e
    (exit "$rc")
    cleanup
}
trap remote_on_exit EXIT

# remote_ts [MACHINE...]: a remote trainingService block for write_config (its lines, a
# newline first) on these machines: 1 = tqremote1 by password, 2 = tqremote2 by ed25519
# key (REMOTE_USER, when set, is the user of both); known_hosts prepared for both
remote_ts() {
    local n
    { remote_known_host 1; remote_known_host 2; } > "$WORK/known_hosts"
    printf '\n  platform: remote\n  knownHostsFile: %s\n  machineList:' "$WORK/known_hosts"
    for n in "$@"; do
        if [ "$n" = 1 ]; then
            printf '\n    - {host: 127.0.0.1, port: %s, user: %s, password: %s}' "${SSHD_PORT[1]}" "${REMOTE_USER:-tqremote1}" "$REMOTE_PASS"
        else
            printf '\n    - {host: 127.0.0.1, port: %s, user: %s, sshKeyFile: %s}' "${SSHD_PORT[2]}" "${REMOTE_USER:-tqremote2}" "$WORK/id_ed25519"
        fi
    done
}

# remote_config FILE CONCURRENCY MAX_TRIALS [extra lines]: trials/metrics.sh on both
# machines (remote_ts 1 2); the extra lines follow the trainingService block as written
remote_config() {
    write_config "$1" trialCommand='sh metrics.sh' trialConcurrency="$2" maxTrialNumber="$3" \
        tuner='{name: Random, classArgs: {seed: 11}}' trainingService="$(remote_ts 1 2)${4:+$'\n'$4}"
}

# remote_dir_of TRIAL: the trial's dir on its machine
remote_dir_of() {
    local m u
    m=$(sql "SELECT machine FROM trial WHERE id='$1'")
    if [ "$m" = "127.0.0.1:${SSHD_PORT[1]}" ]; then u=tqremote1; else u=tqremote2; fi
    echo "/home/$u/nni-experiments/$(sql "SELECT experiment_id FROM trial WHERE id='$1'")/trials/$1"
}

# remote_group_gone PGID SECONDS: no live (non-zombie) process left in the group
remote_group_empty() { [ -z "$(ps -eo pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/')" ]; }
remote_group_gone() {
    wait_until "$2" remote_group_empty "$1" && return 0
    ps -eo pid,pgid,stat,user,args | awk -v g="$1" '$2 == g' >&2
    return 1
}

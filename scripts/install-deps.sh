#!/usr/bin/env bash
# Installs what trialq needs from Debian 12's packages: everything to build, run and
# test it, or with --build only what building and running it needs (the quickstart).
# Packages already installed are not asked for again: when nothing is missing, nothing
# runs (no apt-get, no sudo). As root it uses apt-get directly, otherwise sudo.
set -euo pipefail
only_build=0
case "${1:-}" in
--build) only_build=1 ;;
"") ;;
*) echo "usage: $0 [--build]" >&2; exit 2 ;;
esac
pkgs=(
    # build and run
    build-essential cmake pkg-config
    libsqlite3-dev libcurl4-openssl-dev libyaml-dev libcjson-dev libssh2-1-dev libevent-dev
    libssl-dev  # libcrypto: SHA-256 / HMAC of cloud request signatures (common/acs_sign.c)
    sqlite3 curl procps python3
)
if [ "$only_build" = 0 ]; then
    pkgs+=(
        # unit tests (cmocka); tests/e2e/05: systemd-analyze verify of the units
        libcmocka-dev systemd
        # tests/fuzz (ctest fuzz/short, bench/fuzz.sh): clang with libFuzzer and its sanitizers
        # (their runtime is only a recommendation of clang, which this script does not take)
        clang libclang-rt-dev
        # tests/e2e/55-59, bench/remote_throughput.sh: real sshd "machines" on loopback,
        # ssh-keygen for their host keys and the test users' keys
        openssh-server openssh-client
        # tests/e2e/7x (Kubernetes family): openssl makes the test certificates, unshare
        # (util-linux) gives the test pods their mounts
        openssl util-linux
        # tests/servers/pai_server.py (tests/e2e/8x, OpenPAI) reads the job protocol YAML
        python3-yaml
        # tests/e2e/60-64 and bench/webui_load.sh: Debian's chromium, driven by npm's
        # playwright-core (tests/webui/package-lock.json, `npm ci` on first use)
        chromium
        # repo/standalone-clone clones the checkout
        git
        # tests/e2e/9x (Slurm): a real cluster started by tests/e2e/lib/slurm.sh under the
        # test's own directory, with its own munged, slurm.conf and ports. The packages'
        # system services play no part: without systemd they are not started; with it,
        # slurmctld and slurmd do not start (their units need /etc/slurm/slurm.conf) and
        # the system munged keeps to its own socket and key, apart from the test's
        slurmctld slurmd slurm-client munge
    )
    # a real kubectl checks the Kubernetes test server's wire format; any kubectl already
    # installed will do (Debian's kubernetes-client conflicts with other packagings)
    command -v kubectl >/dev/null || pkgs+=(kubernetes-client)
    # Node.js and npm from Debian only when the machine has none (its own may be newer)
    { command -v node && command -v npm; } >/dev/null || pkgs+=(nodejs npm)
fi

missing=()
for p in "${pkgs[@]}"; do
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" = installed ] || missing+=("$p")
done
if [ "${#missing[@]}" = 0 ]; then
    echo "install-deps: all ${#pkgs[@]} packages are installed"
    exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null; then
        echo "install-deps: not root and no sudo: as root, run apt-get install ${missing[*]}" >&2
        exit 1
    fi
    SUDO=(sudo)
fi
"${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null

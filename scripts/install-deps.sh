#!/usr/bin/env bash
# Installs what trialq needs to build, test and run, from Debian 12's packages.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
pkgs=(
    # build and run
    build-essential cmake pkg-config
    libsqlite3-dev libcurl4-openssl-dev libyaml-dev libcjson-dev libssh2-1-dev libevent-dev
    libcmocka-dev sqlite3 curl procps python3 systemd
    # tests/e2e/55-59, bench/remote_throughput.sh: real sshd "machines" on loopback,
    # ssh-keygen for their host keys and the test users' keys
    openssh-server openssh-client
    # tests/e2e/7x (Kubernetes family): openssl makes the test certificates, unshare
    # (util-linux) gives the test pods their mounts
    openssl util-linux
    # tests/servers/pai_server.py (tests/e2e/8x, OpenPAI) reads the job protocol YAML
    python3-yaml
    # tests/e2e/60-61 and bench/webui_load.sh: Debian's chromium, driven by npm's
    # playwright-core (tests/webui/package-lock.json, `npm ci` on first use)
    chromium
)
# a real kubectl checks the Kubernetes test server's wire format; any kubectl already
# installed will do (Debian's kubernetes-client conflicts with other packagings)
command -v kubectl >/dev/null || pkgs+=(kubernetes-client)
# Node.js and npm from Debian only when the machine has none (its own may be newer)
{ command -v node && command -v npm; } >/dev/null || pkgs+=(nodejs npm)
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null

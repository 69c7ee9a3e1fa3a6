#!/usr/bin/env bash
# Installs what trialq needs to build, test and run, from Debian 12's packages.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    build-essential cmake pkg-config \
    libsqlite3-dev libcurl4-openssl-dev libyaml-dev libcjson-dev libssh2-1-dev libevent-dev \
    libcmocka-dev sqlite3 curl procps python3 systemd >/dev/null

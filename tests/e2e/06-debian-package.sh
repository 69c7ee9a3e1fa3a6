#!/usr/bin/env bash
# 06-debian-package: packaging/build-deb.sh makes trialq_<version>_<arch>.deb, and it is
# right: its fields, its files (programs, web UI, SDK, launcher shim, examples, systemd
# units running /usr/bin/trialq, man pages, completion, documents), no maintainer script
# but a prerm that enables and starts nothing, no path of this build tree in the
# programs, and Depends naming exactly the Debian packages of the shared libraries the
# programs link (readelf's NEEDED, found with dpkg -S) and python3. Then, as root, in a
# mount namespace where /usr, /etc and /var are throwaway overlays (lib/deb_install.sh):
# the build dependencies purged, dpkg -i, the README's quickstart to DONE, dpkg -r
# leaving ~/nni-experiments alone. Not root: the quickstart runs from the package
# unpacked with dpkg -x instead (the installed layout), and the install is skipped (77).
. "$(dirname "$0")/lib.sh"

: "${TRIALQ_DEB_BUILD:?set TRIALQ_DEB_BUILD to the build folder of the package (ctest does)}"
deb=$("$TRIALQ_SRC/packaging/build-deb.sh" "$TRIALQ_DEB_BUILD" | tail -n1)
[ -s "$deb" ] || fail "packaging/build-deb.sh made no package"
field() { dpkg-deb -f "$deb" "$1"; }
version=$(sed -n 's/^project(trialq VERSION \([0-9.]*\).*/\1/p' "$TRIALQ_SRC/CMakeLists.txt")
[ "$(basename "$deb")" = "trialq_${version}_$(dpkg --print-architecture).deb" ] || fail "package named $(basename "$deb")"
[ "$(field Package)" = trialq ] && [ "$(field Version)" = "$version" ] || fail "Package/Version: $(field Package) $(field Version)"

root=$WORK/root
dpkg-deb -x "$deb" "$root"
dpkg-deb -e "$deb" "$WORK/control"
for s in preinst postinst postrm config triggers; do
    [ ! -e "$WORK/control/$s" ] || fail "the package has a $s script"
done
! grep -Eq 'systemctl|deb-systemd|enable' "$WORK/control/prerm" || fail "prerm touches systemd"
for f in usr/bin/trialq usr/bin/trialq-supervise usr/share/trialq/webui/index.html usr/share/trialq/python/nni/__init__.py \
    usr/share/trialq/launcher/nni_node/node usr/share/trialq/examples/quickstart/config.yml \
    usr/lib/systemd/system/trialq-api@.service usr/lib/systemd/system/trialq-worker@.service \
    usr/lib/systemd/system/trialq.target usr/lib/systemd/user/trialq-api@.service \
    usr/lib/systemd/user/trialq-worker@.service usr/lib/systemd/user/trialq.target \
    usr/share/man/man1/nnictl.1.gz usr/share/man/man1/trialq.1.gz usr/share/bash-completion/completions/nnictl \
    usr/share/doc/trialq/README.md usr/share/doc/trialq/operations.md; do
    [ -s "$root/$f" ] || fail "the package lacks /$f"
done
[ "$(readlink "$root/usr/bin/nnictl")" = trialq ] || fail "/usr/bin/nnictl is not a link to trialq"
[ ! -e "$root/etc" ] || fail "the package installs under /etc: $(cd "$root" && find etc)"
for unit in "$root"/usr/lib/systemd/*/trialq-*.service; do
    grep -q '^ExecStart=/usr/bin/trialq ' "$unit" || fail "${unit#"$root"}: ExecStart is not /usr/bin/trialq"
done
for b in trialq trialq-supervise; do
    ! grep -qF "$TRIALQ_SRC" "$root/usr/bin/$b" || fail "/usr/bin/$b holds the build tree's path $TRIALQ_SRC"
done
pass "$(basename "$deb"): fields, files, units on /usr/bin/trialq, no maintainer script but prerm, no build path"

# Depends: the package of each shared library the programs link, and python3
IFS=', ' read -r -a depends <<< "$(field Depends | sed 's/ ([^)]*)//g')"
declare -A want=([python3]=1)
for b in trialq trialq-supervise; do
    for lib in $(readelf -d "$root/usr/bin/$b" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        path=$(ldd "$root/usr/bin/$b" | awk -v l="$lib" '$1 == l {print $3}')
        [ -n "$path" ] || fail "ldd does not resolve $lib of $b"
        pkg=$(dpkg -S "$path" 2>/dev/null || dpkg -S "/usr$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")")
        pkg=${pkg%%$'\n'*}
        pkg=${pkg%%:*}
        [ -n "$pkg" ] || fail "no package owns $path ($lib of $b)"
        want[$pkg]=1
    done
done
for p in "${!want[@]}"; do
    printf '%s\n' "${depends[@]}" | grep -qx "$p" || fail "Depends ($(field Depends)) lacks $p"
done
for p in "${depends[@]}"; do
    [ -n "${want[$p]:-}" ] || fail "Depends names $p, which no program links"
done
pass "Depends = the packages of the linked libraries + python3: $(field Depends)"

port=$(free_port)
if [ "$(id -u)" != 0 ]; then
    # the installed layout, without installing: the programs find their SDK and web UI
    # beside themselves (no build tree to fall back on in a package's build)
    "$root/usr/bin/nnictl" create --config "$root/usr/share/trialq/examples/quickstart/config.yml" --port "$port" \
        --foreground > "$WORK/quickstart.out" 2>&1 || { tail -30 "$WORK/quickstart.out" >&2; fail "quickstart"; }
    id=$(exp_id_of "$WORK/quickstart.out")
    sql_is "SELECT status FROM experiment WHERE id='$id'" DONE || fail "the quickstart's experiment is $SQL_GOT"
    pass "the quickstart from the unpacked package: DONE"
    echo "skip: dpkg -i/-r needs root"
    exit 77
fi
unshare -m --propagation private bash "$TRIALQ_SRC/tests/e2e/lib/deb_install.sh" "$deb" "$WORK" "$port"

#!/bin/bash
# The packages and `make install` where libholdfast was never installed
# (make check-install-deb). Usage: deb.sh DEB_DIR (from `make deb`).
#
# 1. make install PREFIX=<temp>/prefix and PREFIX=/opt/holdfast DESTDIR=<temp>/dest.
# 2. In a private mount namespace (unshare --mount): /usr, /var and /etc are
#    overlays whose writes go to a temp dir (the machine's own stay as they
#    were), /usr/local and this repository (its build trees) are empty
#    tmpfs. Before anything is installed there, no holdfast is seen (PATH,
#    pkg-config, ld.so). Then the prefix install is used as users use it
#    (LD_LIBRARY_PATH for a prefix ld.so does not search, as docs/install.md
#    says), and `apt-get install ./holdfast_*.deb ./libholdfast0_*.deb
#    ./libholdfast-dev_*.deb` installs the packages for real: the CLI from
#    PATH, lock acquire/release, man -w, the completions (bash-completion
#    loads it), and tests/install/prog.c built with `pkg-config --cflags
#    --libs holdfast` runs with no LD_LIBRARY_PATH, both directions with
#    the CLI. Everything goes with the namespace and the temp dir.
set -euo pipefail
debs=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "deb.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "deb.sh: needs root (mount namespace, apt-get)"; exit 77; }
ver=$(sed -n "s/^  version : '\(.*\)',/\1/p" "$src/meson.build")
for p in holdfast libholdfast0 libholdfast-dev; do
	ls "$debs/${p}_${ver}-"*.deb >/dev/null 2>&1 || fail "no ${p}_${ver}-*.deb in $debs"
done
# The machine itself must have no holdfast, or the namespace proves nothing.
if dpkg -s libholdfast0 >/dev/null 2>&1 || dpkg -s holdfast >/dev/null 2>&1 ||
	ls /usr/lib/*/libholdfast.so* /usr/lib/libholdfast.so* /usr/bin/holdfast >/dev/null 2>&1; then
	fail "holdfast is installed on this machine: this test needs one where it never was"
fi

t=$(mktemp -d /tmp/hft-deb.XXXXXX)
trap 'rm -rf "$t"' EXIT
cp "$src/tests/install/prog.c" "$t/prog.c"
cp "$debs/holdfast_${ver}-"*.deb "$debs/libholdfast0_${ver}-"*.deb "$debs/libholdfast-dev_${ver}-"*.deb "$t/"
echo "deb.sh: packages: $(du -ch "$t"/*.deb | tail -1 | cut -f1) (holdfast, libholdfast0, libholdfast-dev)"

s=$(date +%s%N)
make -s -C "$src" install PREFIX="$t/prefix" >"$t/install.log" 2>&1 || { cat "$t/install.log"; fail "make install PREFIX=$t/prefix failed"; }
echo "deb.sh: make install PREFIX: $(( ($(date +%s%N) - s) / 1000000 )) ms, $(du -sh "$t/prefix" | cut -f1) installed"
make -s -C "$src" install PREFIX=/opt/holdfast DESTDIR="$t/dest" >"$t/install.log" 2>&1 ||
	{ cat "$t/install.log"; fail "make install DESTDIR=$t/dest failed"; }
[ "$(ls "$t/dest")" = opt ] || fail "make install DESTDIR wrote outside DESTDIR/opt: $(ls "$t/dest")"
[ -x "$t/dest/opt/holdfast/bin/holdfast" ] && [ -f "$t/dest/opt/holdfast/include/holdfast.h" ] ||
	fail "make install DESTDIR=$t/dest PREFIX=/opt/holdfast: no bin/holdfast or include/holdfast.h"

mkdir -p "$t"/{usr,var,etc}/{u,w}
cat >"$t/inner.sh" <<'INNER'
# no pipefail: each `... | grep -q` is judged by grep (which may end its
# writer with SIGPIPE)
set -eu
t=$1 src=$2 ver=$3
fail() { echo "deb.sh (namespace): $*" >&2; exit 1; }
for d in usr var etc; do
	mount -t overlay overlay -o "lowerdir=/$d,upperdir=$t/$d/u,workdir=$t/$d/w" "/$d"
done
mount -t tmpfs tmpfs /usr/local
mount -t tmpfs tmpfs "$src"
cd "$t"
mkdir w
export PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
unset PKG_CONFIG_PATH LD_LIBRARY_PATH MANPATH HOLDFAST_BIN HOLDFAST_FAULTS
libdir=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

# Nothing of holdfast is seen before an install.
! command -v holdfast >/dev/null || fail "holdfast found before any install: $(command -v holdfast)"
! pkg-config --exists holdfast || fail "pkg-config finds holdfast before any install"
! ldconfig -p | grep -q libholdfast || fail "ld.so knows libholdfast before any install"
[ -z "$(ls -A "$src")" ] || fail "the repository is still visible"

lock_cycle() { # CLI: acquire, status names it, release, free
	local cli=$1 l=$t/w/$2.lock out tok
	out=$("$cli" lock acquire -n "$l") || fail "$cli lock acquire failed"
	tok=${out%% *}
	"$cli" lock status "$l" | grep -q '^held' || fail "$cli lock status: not held: $("$cli" lock status "$l")"
	"$cli" lock release "$l" --token "$tok" || fail "$cli lock release failed"
	"$cli" lock status "$l" | grep -q '^free' || fail "$cli lock status after release: $("$cli" lock status "$l")"
}
etcd_handoff() { # the static CLI hands an etcd backend to holdfast-etcd beside it
	local rc=0
	"$1" lock status "$t/w/E.lock" --backend etcd://127.0.0.1:1 --etcd-timeout 500ms 2>"$t/etcd.err" || rc=$?
	[ "$rc" = 74 ] && grep -q 'etcd http://127.0.0.1:1' "$t/etcd.err" ||
		fail "$1 did not hand the etcd backend to holdfast-etcd (exit $rc): $(cat "$t/etcd.err")"
}

# 1. make install PREFIX=$t/prefix
p=$t/prefix
[ "$("$p/bin/holdfast" --version)" = "holdfast $ver" ] || fail "prefix: holdfast --version: $("$p/bin/holdfast" --version)"
lock_cycle "$p/bin/holdfast" P
etcd_handoff "$p/bin/holdfast"
MANPATH=$p/share/man man -w holdfast | grep -qx "$p/share/man/man1/holdfast.1" || fail "prefix: man -w holdfast"
[ -f "$p/share/bash-completion/completions/holdfast" ] && [ -f "$p/share/zsh/site-functions/_holdfast" ] &&
	[ -f "$p/share/fish/vendor_completions.d/holdfast.fish" ] || fail "prefix: completions missing"
export PKG_CONFIG_PATH=$p/lib/$libdir/pkgconfig
[ "$(pkg-config --modversion holdfast)" = "$ver" ] || fail "prefix: pkg-config --modversion holdfast"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -o prog-prefix prog.c $(pkg-config --cflags --libs holdfast) || fail "prefix: cc prog.c"
unset PKG_CONFIG_PATH
# a prefix ld.so does not search needs LD_LIBRARY_PATH (as docs/install.md says) ...
if ./prog-prefix "$p/bin/holdfast" "$t/w/Q.lock" 2>"$t/ld.err"; then fail "prefix: prog ran with no LD_LIBRARY_PATH"; fi
grep -q 'libholdfast.so.0' "$t/ld.err" || fail "prefix: unexpected failure: $(cat "$t/ld.err")"
# ... and with it, runs against the installed CLI both ways
LD_LIBRARY_PATH=$p/lib/$libdir ./prog-prefix "$p/bin/holdfast" "$t/w/Q.lock" 2>"$t/prog.err" | grep -qx ok ||
	fail "prefix: prog: $(cat "$t/prog.err")"

# 2. apt-get install ./the .debs, for real (the overlays take the writes)
s=$(date +%s%N)
DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	"$t"/holdfast_*.deb "$t"/libholdfast0_*.deb "$t"/libholdfast-dev_*.deb >"$t/apt.log" 2>&1 ||
	{ cat "$t/apt.log"; fail "apt-get install ./*.deb failed"; }
echo "deb.sh: apt-get install ./holdfast_*.deb ./libholdfast0_*.deb ./libholdfast-dev_*.deb: $(( ($(date +%s%N) - s) / 1000000 )) ms," \
	"$(dpkg-query -W -f '${Installed-Size}\n' holdfast libholdfast0 libholdfast-dev | awk '{ s += $1 } END { print s }') KiB installed"
[ "$(command -v holdfast)" = /usr/bin/holdfast ] || fail "holdfast on PATH is $(command -v holdfast)"
[ "$(holdfast --version)" = "holdfast $ver" ] || fail "holdfast --version: $(holdfast --version)"
lock_cycle holdfast D
etcd_handoff /usr/bin/holdfast
[ "$(man -w holdfast)" = /usr/share/man/man1/holdfast.1.gz ] || fail "man -w holdfast: $(man -w holdfast)"
man -w holdfast-lock >/dev/null && man -w 7 holdfast >/dev/null && man -w holdfast-etcd >/dev/null ||
	fail "man -w holdfast-lock / 7 holdfast / holdfast-etcd"
[ -f /usr/share/zsh/vendor-completions/_holdfast ] && [ -f /usr/share/fish/vendor_completions.d/holdfast.fish ] ||
	fail "zsh or fish completion missing"
bash --norc -c '. /usr/share/bash-completion/bash_completion; __load_completion holdfast && complete -p holdfast' |
	grep -q _holdfast || fail "bash-completion does not load holdfast's completion"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -o prog-deb prog.c $(pkg-config --cflags --libs holdfast) || fail "deb: cc prog.c"
# (/lib is /usr/lib: ld.so.cache may name either)
ldd ./prog-deb >"$t/ldd.out"
grep -Eq "libholdfast.so.0 => (/usr)?/lib/$libdir/libholdfast.so.0 " "$t/ldd.out" ||
	fail "deb: prog does not load /usr/lib/$libdir/libholdfast.so.0: $(ldd ./prog-deb)"
./prog-deb /usr/bin/holdfast "$t/w/R.lock" 2>"$t/prog.err" | grep -qx ok ||
	fail "deb: prog against the installed CLI: $(cat "$t/prog.err")"
./prog-deb - "$t/w/S.lock" | grep -qx ok || fail "deb: prog alone"
apt-get purge -y -q holdfast libholdfast0 libholdfast-dev >"$t/apt.log" 2>&1 || { cat "$t/apt.log"; fail "apt-get purge failed"; }
[ ! -e /usr/bin/holdfast ] && [ ! -e "/usr/lib/$libdir/libholdfast.so.0" ] && ! dpkg -s libholdfast0 >/dev/null 2>&1 ||
	fail "apt-get purge left holdfast behind"
echo "deb.sh: ok"
INNER
unshare --mount --propagation private bash "$t/inner.sh" "$t" "$src" "$ver"
# nothing of it on the machine itself
[ ! -e /usr/bin/holdfast ] && ! dpkg -s holdfast >/dev/null 2>&1 || fail "the namespace's install reached the machine"
echo "check-install-deb: 1 passed, 0 failed"

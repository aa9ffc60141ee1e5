#!/usr/bin/env bash
# tests/install/python.sh [SOURCE_DIR] - the Python binding installed as a
# Python developer installs it (issue 18, item 1), from a clean environment:
#
#  1. a fresh venv (no system site packages) of each interpreter found (the
#     python3 on PATH, Debian's /usr/bin/python3): `pip install --no-index
#     ./bindings/python`, offline (the in-tree backend needs nothing);
#  2. `python3 -m build` (Debian's python3-build; isolated, no index) makes
#     an sdist and a wheel from it;
#     the wheel has a platform tag, carries holdfast_locks/libholdfast.so.0,
#     and its RECORD matches its files;
#  3. in a private mount namespace where the repository, /usr/local and any
#     installed libholdfast are hidden (tmpfs / /dev/null over them) and no
#     libholdfast is on the loader's or pkg-config's path: the sdist, copied
#     outside the repository, installs with `pip install --no-index` (in a
#     fresh venv of the first interpreter); each
#     venv's holdfast_locks takes a lock (a child process is refused naming
#     us), releases it, and the filelock front locks; HOLDFAST_LIB still
#     overrides the carried library;
#  4. the negative control: with the carried library deleted from a venv,
#     the same import fails with LibraryNotFound in that namespace (so
#     nothing else there could have served it).
# Also: with no compiler, or no jansson.h, the build stops with one message
# naming the package to install. Prints each install's time (monotonic, /proc/uptime) and sizes. Needs
# root (unshare --mount), a C compiler, libjansson-dev, libcurl4-openssl-dev,
# python3-build, python3-venv (Makefile PKGS). Leaves nothing behind.
set -eu
src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
pkg=$src/bindings/python
fail() { echo "python.sh: FAIL: $*" >&2; exit 1; }
say() { echo "python.sh: $*"; }
mono() { local up _; read -r up _ </proc/uptime; echo "$up"; }
since() { awk -v a="$1" -v b="$(mono)" 'BEGIN { printf "%.1f s", b - a }'; }

[ "$(id -u)" = 0 ] || fail "needs root (a private mount namespace hides the repository and /usr/local)"
t=$(mktemp -d /tmp/hft-pyinst.XXXXXX)
trap 'rm -rf "$t"' EXIT
mkdir "$t/home" "$t/tmp" "$t/dist" "$t/elsewhere"
# pip as a new user's: no config, no find-links, no index, no cache.
export HOME=$t/home TMPDIR=$t/tmp PIP_CONFIG_FILE=/dev/null PIP_NO_INDEX=1 PIP_NO_CACHE_DIR=1 \
	PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1 PYTHONNOUSERSITE=1
unset PIP_FIND_LINKS HOLDFAST_LIB LD_LIBRARY_PATH PKG_CONFIG_PATH PYTHONPATH

# The interpreters: each distinct one that can make a venv.
pys=()
for cand in "$(command -v python3 || true)" /usr/bin/python3; do
	[ -n "$cand" ] && [ -x "$cand" ] || continue
	real=$("$cand" -c 'import os, sys; print(os.path.realpath(sys.executable))') || continue
	case " ${pys[*]-} " in *" $real "*) continue ;; esac
	pys+=("$real")
done
[ ${#pys[@]} -gt 0 ] || fail "no python3"

# 0. No compiler: one message naming the package to install, before any work.
if out=$(CC=hft-no-such-cc "${pys[0]}" "$pkg/build_backend/holdfast_pep517.py" "$t/tmp" 2>&1); then
	fail "the backend built with no compiler"
fi
case $out in *"no C compiler (hft-no-such-cc)"*"apt install gcc"*) ;; *) fail "no-compiler message: $out" ;; esac
# No jansson.h (a compiler told to search no system include directory).
if out=$(CC="${CC:-cc} -nostdinc" "${pys[0]}" "$pkg/build_backend/holdfast_pep517.py" "$t/tmp" 2>&1); then
	fail "the backend built with no jansson.h"
fi
case $out in *"<jansson.h> not found; install libjansson-dev"*) ;; *) fail "no-header message: $out" ;; esac

# 1. pip install ./bindings/python in a fresh venv of each interpreter.
before=$(git -C "$src" status --porcelain --ignored -- bindings/python)
venvs=()
i=0
for py in "${pys[@]}"; do
	v=$t/venv$i
	"$py" -m venv "$v" || fail "$py -m venv failed (Debian: apt install python3-venv)"
	grep -qx 'include-system-site-packages = false' "$v/pyvenv.cfg" || fail "$v sees system site packages"
	s=$(mono)
	"$v/bin/python" -m pip install -q "$pkg" >"$t/pip$i.log" 2>&1 ||
		{ cat "$t/pip$i.log" >&2; fail "$v: pip install --no-index $pkg failed"; }
	site=$("$v/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
	say "$py: pip install --no-index ./bindings/python: $(since "$s"); installed: $(du -sh "$site/holdfast_locks" | cut -f1) ($site/holdfast_locks)"
	[ -f "$site/holdfast_locks/libholdfast.so.0" ] || fail "$v: the installed package carries no libholdfast.so.0"
	venvs+=("$v")
	i=$((i + 1))
done
[ "$(git -C "$src" status --porcelain --ignored -- bindings/python)" = "$before" ] ||
	fail "pip install left files in bindings/python"

# 2. python3 -m build: sdist + wheel (the wheel built from the sdist).
/usr/bin/python3 -c 'import build' 2>/dev/null || fail "/usr/bin/python3 has no 'build' (apt install python3-build)"
s=$(mono)
/usr/bin/python3 -m build --outdir "$t/dist" "$pkg" >"$t/build.log" 2>&1 ||
	{ cat "$t/build.log" >&2; fail "python3 -m build failed"; }
say "python3 -m build (isolated, offline): $(since "$s")"
sdist=$(ls "$t"/dist/holdfast_locks-*.tar.gz)
whl=$(ls "$t"/dist/holdfast_locks-*.whl)
say "sdist $(basename "$sdist"): $(du -h "$sdist" | cut -f1); wheel $(basename "$whl"): $(du -h "$whl" | cut -f1)"
case $whl in *-none-any.whl) fail "$whl: a pure-Python tag on a wheel that carries a shared object" ;; esac
/usr/bin/python3 - "$whl" <<'EOF' || fail "$whl: bad wheel"
import base64, csv, hashlib, io, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = set(z.namelist())
assert "holdfast_locks/libholdfast.so.0" in names, "no libholdfast.so.0"
rec = [n for n in names if n.endswith(".dist-info/RECORD")][0]
rows = list(csv.reader(io.StringIO(z.read(rec).decode())))
assert {r[0] for r in rows} == names, "RECORD lists %s, the zip has %s" % ({r[0] for r in rows} ^ names,)
for path, digest, size in rows:
    if path == rec:
        continue
    data = z.read(path)
    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert digest == want and int(size) == len(data), path + ": RECORD mismatch"
wheel = z.read(rec.replace("RECORD", "WHEEL")).decode()
assert "Root-Is-Purelib: false" in wheel and "Tag: py3-none-linux_" in wheel, wheel
EOF
for f in src/lib/backend.c src/lib/fs/dirlock.c src/lib/etcd/etcdlock.c src/lib/fs/fs_backend.c; do
	tar -tzf "$sdist" | grep -q "/csrc/$f$" || fail "$sdist carries no $f"
done
cp "$sdist" "$t/elsewhere/"

# 3 and 4: inside a private mount namespace.
cat >"$t/check.py" <<'EOF'
import os, subprocess, sys
import holdfast_locks as hf, holdfast_locks._lib as L
from holdfast_locks.filelock import FileLock
d = sys.argv[1]
with hf.Lock(os.path.join(d, "a.lock")) as lk:
    assert lk.held and lk.fence > 0
    assert os.path.dirname(L.path) == os.path.dirname(hf.__file__), "not the carried library: %s" % L.path
    child = ("import holdfast_locks as hf, sys\ntry:\n hf.Lock(sys.argv[1]).acquire()\nexcept hf.Held as e:\n"
             " sys.exit(0 if e.holder['pid'] == int(sys.argv[2]) else 3)\nsys.exit(2)\n")
    rc = subprocess.run([sys.executable, "-c", child, os.path.join(d, "a.lock"), str(os.getpid())]).returncode
    assert rc == 0, "a second process was not refused naming the holder (%d)" % rc
assert not lk.held
fl = FileLock(os.path.join(d, "f.lock"), timeout=0)
with fl:
    assert fl.is_locked
assert not fl.is_locked
print("ok", L.path, hf.library_version())
EOF
cat >"$t/ns.sh" <<'EOF'
set -eu
t=$1 src=$2; shift 2
cd /
hide() { mount -t tmpfs -o size=64k,mode=0755 hft-pyinst-hide "$1"; }
hide "$src"
# /usr/local unless an interpreter lives there (then only its libholdfast*).
case " $* " in *" /usr/local/"*) loc=1 ;; *) loc=0; hide /usr/local ;; esac
for f in $(ldconfig -p | sed -n 's/.*libholdfast.* => //p') \
	$( [ $loc = 1 ] && find /usr/local -name 'libholdfast*' 2>/dev/null); do
	mount --bind /dev/null "$f"
done
ldconfig -p | grep -q 'libholdfast\.' && { echo "ns: libholdfast still in the loader's cache" >&2; exit 1; }
pkg-config --exists holdfast 2>/dev/null && { echo "ns: pkg-config still finds holdfast" >&2; exit 1; }
[ ! -e "$src/meson.build" ] || { echo "ns: the repository is not hidden" >&2; exit 1; }
mono() { local up _; read -r up _ </proc/uptime; echo "$up"; }
n=0
for py in "$1"; do # the sdist with the first interpreter (each one's venv came from the tree)
	v=$t/sdist$n
	"$py" -m venv "$v"
	s=$(mono)
	(cd "$t/elsewhere" && "$v/bin/python" -m pip install -q ./holdfast_locks-*.tar.gz) >"$t/sdist$n.log" 2>&1 ||
		{ cat "$t/sdist$n.log" >&2; echo "ns: $py: pip install --no-index <sdist> failed with the repository hidden" >&2; exit 1; }
	site=$("$v/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
	awk -v a="$s" -v b="$(mono)" -v py="$py" -v sz="$(du -sh "$site/holdfast_locks" | cut -f1)" \
		'BEGIN { printf "python.sh: %s: pip install --no-index <sdist> (outside the repository, hidden): %.1f s; installed: %s\n", py, b - a, sz }'
	n=$((n + 1))
done
for v in "$t"/venv* "$t"/sdist*; do
	[ -x "$v/bin/python" ] || continue
	d=$(mktemp -d "$t/tmp/locks.XXXXXX")
	out=$(env -u HOLDFAST_LIB "$v/bin/python" "$t/check.py" "$d") ||
		{ echo "ns: $v: import holdfast_locks / lock / filelock failed with no libholdfast installed" >&2; exit 1; }
	echo "python.sh: $v: $out"
	# HOLDFAST_LIB still overrides: a bad one is the only candidate tried.
	HOLDFAST_LIB=/nonexistent/libholdfast.so "$v/bin/python" -c '
import holdfast_locks as hf
try:
    hf.Lock("'"$d"'/b.lock").acquire()
except hf.LibraryNotFound as e:
    assert "/nonexistent/libholdfast.so" in str(e), e
else:
    raise SystemExit("HOLDFAST_LIB did not override the carried library")' ||
		{ echo "ns: $v: HOLDFAST_LIB does not override" >&2; exit 1; }
done
# The negative control: without the carried library, nothing here serves one.
v=$t/venv0
rm "$("$v/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')/holdfast_locks/libholdfast.so.0"
d=$(mktemp -d "$t/tmp/locks.XXXXXX")
if "$v/bin/python" "$t/check.py" "$d" >"$t/neg.log" 2>&1; then
	echo "ns: negative control: holdfast_locks found a library although the carried one is gone:" >&2
	cat "$t/neg.log" >&2; exit 1
fi
grep -q LibraryNotFound "$t/neg.log" || { cat "$t/neg.log" >&2; echo "ns: negative control failed otherwise" >&2; exit 1; }
echo "python.sh: negative control: without the carried library: LibraryNotFound"
EOF
unshare --mount --propagation private bash "$t/ns.sh" "$t" "$src" "${pys[@]}" ||
	fail "in the private mount namespace (see above)"
say "ok"

#!/bin/sh
# The installed library as a user gets it: `meson install` into a scratch
# root, a program built with pkg-config against that tree (shared and
# static), run against the installed CLI in both directions; the shared
# library exports exactly the functions holdfast.h declares (and
# libholdfast.sym lists); HOLDFAST_FAULTS means nothing to a program that
# links it. Usage: install.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
src=$2
cc=${CC:-cc}
# Programs are built and run from here: the build tree, which is executable
# (/dev/shm may be mounted noexec).
t=$(mktemp -d "$build/hft-install.XXXXXX")
trap 'rm -rf "$t"' EXIT
fail() { echo "install.sh: $*" >&2; exit 1; }

DESTDIR=$t/root meson install -C "$build" --no-rebuild --quiet >"$t/install.log" 2>&1 ||
	{ cat "$t/install.log" >&2; fail "meson install failed"; }
pc=$(find "$t/root" -name holdfast.pc)
[ -n "$pc" ] || fail "no holdfast.pc installed"
so=$(find "$t/root" -name 'libholdfast.so.*' -type f)
a=$(find "$t/root" -name libholdfast.a)
bin=$(find "$t/root" -path '*/bin/holdfast' -type f)
hdr=$(find "$t/root" -name holdfast.h)
[ -n "$so" ] && [ -n "$a" ] && [ -n "$bin" ] && [ -n "$hdr" ] ||
	fail "missing from the install: so='$so' a='$a' bin='$bin' header='$hdr'"
[ -n "$(find "$t/root" -name holdfast-version.h)" ] || fail "holdfast-version.h not installed"

# The .pc names the configured prefix; point a copy at the scratch root.
prefix=$(sed -n 's/^prefix=//p' "$pc")
mkdir "$t/pc"
sed "s|^prefix=.*|prefix=$t/root$prefix|" "$pc" >"$t/pc/holdfast.pc"
export PKG_CONFIG_PATH="$t/pc"
cflags=$(pkg-config --cflags holdfast)
libs=$(pkg-config --libs holdfast)
libdir=$(pkg-config --variable=libdir holdfast)
[ "$(pkg-config --modversion holdfast)" = "$(sed -n "s/^  version : '\(.*\)',/\1/p" "$src/meson.build")" ] ||
	fail "pkg-config --modversion disagrees with meson.build"

# The version is meson.build's everywhere: pkg-config (above), the CLI,
# the manual page, the library.
want=$(pkg-config --modversion holdfast)
[ "$("$bin" --version)" = "holdfast $want" ] || fail "holdfast --version says $("$bin" --version), not $want"
man=$(find "$t/root" -name holdfast.1)
[ -n "$man" ] && grep -q "\"holdfast $want\"" "$man" || fail "the installed manual page does not say holdfast $want"

# 0. The wall: the CLI includes holdfast.h, src/base and its own headers,
# nothing of src/lib (the build's include path for it has no src/lib
# either; this names the file that would break it).
for f in "$src"/src/cli/*.c "$src"/src/cli/*.h; do
	grep -o '^#include "[^"]*"' "$f" | sed 's/^#include "\(.*\)"/\1/' | while read -r h; do
		[ "$h" = holdfast.h ] || [ -e "$src/src/base/$h" ] || [ -e "$src/src/cli/$h" ] ||
			fail "$f includes \"$h\", which is neither holdfast.h, src/base nor src/cli"
	done
done
grep -q "inc_cli = \[inc_pub, inc_base, include_directories('src/cli')\]" "$src/meson.build" ||
	fail "meson.build: the CLI's include path is not holdfast.h, src/base and src/cli alone"

# 1. Exports: header == version script == nm -D.
grep -E '^[a-z].*[ *]hf_[a-z0-9_]+\(' "$hdr" | grep -oE 'hf_[a-z0-9_]+\(' | tr -d '(' | sort -u >"$t/header"
sed -n 's/^[[:space:]]*\(hf_[a-z0-9_]*\);/\1/p' "$src/libholdfast.sym" | sort -u >"$t/sym"
nm -D --defined-only "$so" | awk '$2 == "T" || $2 == "W" || $2 == "D" || $2 == "B" { print $3 }' |
	sed 's/@.*//' | sort -u >"$t/nm"
[ -s "$t/header" ] || fail "no functions found in $hdr"
diff -u "$t/header" "$t/nm" >&2 || fail "nm -D of the library differs from holdfast.h (above)"
diff -u "$t/header" "$t/sym" >&2 || fail "libholdfast.sym differs from holdfast.h (above)"
if nm "$a" 2>/dev/null | grep -q ' T hf_fault_'; then
	fail "the installed archive carries the fault engine"
fi

# 2. Built as users build it, against the installed tree only.
# shellcheck disable=SC2086
$cc -std=c11 -Wall -Wextra -Werror $cflags -o "$t/prog" "$src/tests/install/prog.c" $libs ||
	fail "building against the installed tree failed"
LD_LIBRARY_PATH=$libdir ldd "$t/prog" | grep -q "$libdir/libholdfast.so" ||
	fail "prog does not load the installed libholdfast.so"
# shellcheck disable=SC2086
static_libs=$(pkg-config --static --libs holdfast)
case " $static_libs " in *" -ljansson "*) ;; *) fail "pkg-config --static names no -ljansson: $static_libs" ;; esac
# shellcheck disable=SC2086
$cc -std=c11 $cflags -o "$t/prog-static" "$src/tests/install/prog.c" \
	-Wl,-Bstatic -lholdfast -Wl,-Bdynamic $(echo " $static_libs " | sed 's/ -lholdfast / /') ||
	fail "static linking against libholdfast.a (pkg-config --static) failed"
if readelf -d "$t/prog-static" | grep -q 'libholdfast'; then
	fail "prog-static still needs libholdfast.so"
fi

# docs/library.md's example, as printed there, wrapped in main().
awk '/^## The C library/ { f = 1 } f && /^```c$/ { g = 1; next } g && /^```$/ { exit } g' \
	"$src/docs/library.md" >"$t/snippet"
[ -s "$t/snippet" ] || fail "no C example found in docs/library.md"
{
	echo '#include <stdio.h>'
	grep '^#include' "$t/snippet"
	echo 'int main(void) {'
	grep -v '^#include' "$t/snippet"
	echo 'return rc < 0; }'
} >"$t/readme.c"
# shellcheck disable=SC2086
$cc -std=gnu11 -Wall -Werror $cflags -o "$t/readme" "$t/readme.c" $libs ||
	fail "docs/library.md's C example does not build"
(cd "$t" && LD_LIBRARY_PATH=$libdir ./readme) || fail "docs/library.md's C example failed"
[ ! -e "$t/build.lock" ] || fail "docs/library.md's example left build.lock behind"

# 2b. The installed holdfast has no etcd client: it hands an etcd backend to
# the installed holdfast-etcd (an endpoint nobody answers: exit 74 naming
# it, not 70 "cannot be run").
[ -x "$(dirname "$bin")/holdfast-etcd" ] || fail "holdfast-etcd not installed beside holdfast"
rc=0
"$bin" lock status "$t/E.lock" --backend etcd://127.0.0.1:1 --etcd-timeout 500ms 2>"$t/etcd.err" || rc=$?
[ "$rc" = 74 ] && grep -q 'etcd http://127.0.0.1:1' "$t/etcd.err" ||
	fail "holdfast did not hand the etcd backend to holdfast-etcd (exit $rc): $(cat "$t/etcd.err")"

# 3. Both directions with the installed CLI, shared and static.
LD_LIBRARY_PATH=$libdir "$t/prog" "$bin" "$t/L1.lock" >"$t/out" || fail "prog (shared) failed"
"$t/prog-static" "$bin" "$t/L2.lock" >>"$t/out" || fail "prog (static) failed"

# 4. HOLDFAST_FAULTS: the CLI obeys it (a crash at its first call), a
# program linking the library does not, and a misspelt rule changes nothing.
rc=0
HOLDFAST_FAULTS='crash:*:1' "$bin" lock status "$t/L1.lock" >/dev/null 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "the CLI ignored HOLDFAST_FAULTS=crash:*:1 (the check is void)"
rc=0
HOLDFAST_FAULTS='crash:no.such.point:1' "$bin" lock status "$t/L1.lock" >/dev/null 2>"$t/err" || rc=$?
[ "$rc" -eq 64 ] && grep -q "no.such.point" "$t/err" ||
	fail "the CLI did not refuse a misspelt fault rule (exit $rc): $(cat "$t/err")"
for rules in 'crash:*:1' 'fail:*:1:EIO' 'crash:no.such.point:1' 'garbage'; do
	HOLDFAST_FAULTS=$rules LD_LIBRARY_PATH=$libdir "$t/prog" - "$t/L3.lock" >>"$t/out" ||
		fail "a program linking libholdfast.so obeyed HOLDFAST_FAULTS=$rules"
	HOLDFAST_FAULTS=$rules "$t/prog-static" - "$t/L4.lock" >>"$t/out" ||
		fail "a program linking libholdfast.a obeyed HOLDFAST_FAULTS=$rules"
done
[ "$(grep -c '^ok$' "$t/out")" -eq 10 ] || fail "prog did not report ok ten times: $(cat "$t/out")"

# 5. For people: -V, the manual pages (installed, found by man through the
# prefix, rendering without warnings) and the shell completions (where each
# shell looks under the prefix, loading and completing).
[ "$("$bin" -V)" = "holdfast $want" ] || fail "holdfast -V says $("$bin" -V), not $want"
[ "$("$bin" lock acquire -V)" = "holdfast $want" ] || fail "holdfast lock acquire -V"
share=$t/root$prefix/share
for page in man1/holdfast.1 man1/holdfast-session.1 man1/holdfast-lock.1 man1/holdfast-scope.1 \
	man1/holdfast-run.1 man1/holdfast-edit.1 man1/holdfast-flock.1 \
	man1/holdfast-list.1 man7/holdfast.7; do
	p=$share/man/$page
	[ -f "$p" ] || fail "$page is not installed under $share/man"
	w=$(groff -ww -z -man "$p" 2>&1) || true
	[ -z "$w" ] || fail "groff -ww: $page: $w"
	if command -v man >/dev/null 2>&1; then
		w=$(MANWIDTH=80 man --warnings -l "$p" 2>&1 >"$t/page.txt") || true
		[ -z "$w" ] || fail "man --warnings -l $page: $w"
		grep -q "holdfast" "$t/page.txt" || fail "$page renders without a word of holdfast"
	fi
done
if command -v man >/dev/null 2>&1; then
	MANPATH=$share/man man -w holdfast-run 2>/dev/null | grep -q "^$share/man/man1/holdfast-run.1" ||
		fail "man -w holdfast-run does not find the installed page through MANPATH"
	MANPATH=$share/man man -w holdfast-flock 2>/dev/null | grep -q "^$share/man/man1/holdfast-flock.1" ||
		fail "man -w holdfast-flock does not find holdfast-flock(1)"
	MANPATH=$share/man man -w 7 holdfast 2>/dev/null | grep -q "^$share/man/man7/holdfast.7" ||
		fail "man -w 7 holdfast does not find holdfast(7)"
fi
bashc=$share/bash-completion/completions/holdfast
zshc=$share/zsh/site-functions/_holdfast
fishc=$share/fish/vendor_completions.d/holdfast.fish
[ -f "$bashc" ] && [ -f "$zshc" ] && [ -f "$fishc" ] ||
	fail "completions missing: bash '$bashc' zsh '$zshc' fish '$fishc'"
got=$(bash --norc -c '. "$1"; COMP_WORDS=(holdfast lock ""); COMP_CWORD=2; _holdfast; echo "${COMPREPLY[*]}"' bash "$bashc")
case " $got " in *" acquire "*) ;; *) fail "the installed bash completion offers '$got' for 'holdfast lock '" ;; esac
if [ -f /usr/share/bash-completion/bash_completion ]; then
	# bash-completion loads it on demand from XDG_DATA_DIRS/bash-completion/completions
	XDG_DATA_DIRS=$share bash --norc -c '. /usr/share/bash-completion/bash_completion
		__load_completion holdfast && complete -p holdfast' 2>/dev/null | grep -q '_holdfast' ||
		fail "bash-completion does not load the installed completion from $share"
fi
if command -v zsh >/dev/null 2>&1; then
	zsh -n "$zshc" || fail "zsh -n $zshc"
fi
if command -v fish >/dev/null 2>&1; then
	fish -n "$fishc" || fail "fish -n $fishc"
	# fish finds vendor completions under XDG_DATA_DIRS (its share/config.fish),
	# for a command on PATH
	got=$(PATH=$(dirname "$bin"):$PATH HOME=$t XDG_CONFIG_HOME=$t/config XDG_DATA_DIRS=$share \
		fish -c 'complete -C "holdfast lock "' | cut -f1 | tr '\n' ' ')
	case " $got " in *" acquire "*) ;; *) fail "fish's completion from $fishc offers '$got'" ;; esac
fi
echo "install: $(wc -l <"$t/header") functions exported, shared and static builds pass"

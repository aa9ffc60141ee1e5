#!/bin/bash
# --help, the parsers, the manual pages and the completions agree (issue 9).
#
#  1. --help / -h of every command and subcommand: its usage on stdout, exit
#     0; -V / --version: "holdfast VERSION", exit 0.
#  2. Every option in a parser's tables (the C sources' getopt tables and
#     optstrings, session's table) appears in that command's --help.
#  3. Every option --help shows for a subcommand (its synopsis lines, the
#     common ones; run and edit: all) is accepted by that subcommand's parser:
#     given to it, no "unknown option" for it.
#  4. The manual pages render without warnings (man --warnings, groff -ww)
#     and name exactly the options of their command's --help; holdfast(1) has
#     every option of the top-level usage.
#  5. The bash completion, sourced in a real bash (with and without
#     bash-completion) and called with COMP_WORDS: commands, subcommands,
#     options (each in --help, accepted by the parser, every synopsis option
#     offered), files, commands after --. zsh and fish: they parse, and offer
#     the same (fish through `complete -C`, zsh through its tables).
#
# Usage: help.sh BUILD_DIR (HOLDFAST_BIN, HOLDFAST_SRC from the environment)
set -euo pipefail
build=$(cd "$1" && pwd)
bin=$HOLDFAST_BIN
src=$HOLDFAST_SRC
t=$(mktemp -d "${TMPDIR:-/tmp}/hft-help.XXXXXX")
trap 'rm -rf "$t"' EXIT
cd "$t"
export HOLDFAST_REGISTRY=$t/registry/scope.lock
unset HOLDFAST_FAULTS HOLDFAST_PAUSE_FDS HOLDFAST_POD
failures=0
fail() {
	echo "help.sh: FAIL: $*" >&2
	failures=$((failures + 1))
}
checks=0
ok() { checks=$((checks + 1)); }

families="session lock scope run edit selftest flock list"
declare -A subs=(
	[session]="take release renew status assert-held race"
	[lock]="acquire release renew check status"
	[scope]="register renew release list effective check reap"
	[run]="" [edit]="" [selftest]="" [flock]="" [list]=""
)
declare -A source_of=(
	[session]=cmd_session.c [lock]=cmd_lock.c [scope]=cmd_scope.c
	[run]=cmd_run.c [edit]=cmd_edit.c [selftest]=cmd_selftest.c [flock]=cmd_flock.c
	[list]=cmd_list.c
)
version=$(sed -n "s/^  version : '\(.*\)',/\1/p" "$src/meson.build")

# The options named in a text: -x and --long words (not inside words like
# read-then-write; "env -i" is the shell's, in the scope usage).
opts() {
	sed 's/env -i//g' | grep -oE '(^|[^A-Za-z0-9_./-])--?[A-Za-z][A-Za-z0-9-]*' |
		sed -E 's/^[^-]*//' | sort -u
}
# The lines of a usage that are subcommand sub's synopsis (with their
# continuation lines).
synopsis() { # family sub < usage
	awk -v f="$1" -v s="$2" '
		$0 ~ "^(usage:)? +holdfast " f " " { cur = ($1 == "usage:") ? $4 : $3; if (cur == s) print; next }
		/^ {10,}\[/ && cur != "" { if (cur == s) print; next }
		{ cur = "" }'
}
# The options of a parser, from its C source.
parser_opts() { # family
	{ parser_opts_ "$@"; } | sort -u
}
parser_opts_() {
	local f=$src/src/cli/${source_of[$1]}
	local long='\{ "[a-z][a-z-]*", (no|required|optional)_argument'
	{
		grep -oE "$long" "$f" || true
		if grep -q CLI_WAIT_LONGOPTS "$f"; then grep -oE "$long" "$src/src/cli/run.h" || true; fi
	} | sed -E 's/\{ "([^"]*)".*/--\1/'
	{ grep -oE 'getopt_long\(argc, argv, "[^"]*"' "$f" || true; } | sed -E 's/.*"(.*)"/\1/' |
		tr -d '+:' | { grep -o . || true; } | sed 's/^/-/'
	{ grep -oE '\{ "--[a-z-]+", O_' "$f" || true; } | sed -E 's/\{ "([^"]*)".*/\1/'
	{ grep -oE 'strcmp\((argv\[(i|1)\]|cmd\[0\]), "--?[a-zA-Z][-a-zA-Z]*"\)' "$f" || true; } | sed -E 's/.*"(-[^"]*)".*/\1/'
}
# Does the parser of "family sub" accept option opt? It is given, with a
# value when the usage shows one, and then an option no parser knows: a
# parser that processes opt complains about the probe (or the value), never
# calls opt unknown.
declare -A accepted=() # "family sub opt": the verdict of an earlier probe
accepts() { # family sub opt usage
	local key="$1 $2 $3"
	if [ -z "${accepted[$key]+set}" ]; then
		local rc=0
		accepts_ "$@" || rc=$?
		accepted[$key]=$rc
	fi
	return "${accepted[$key]}"
}
accepts_() { # family sub opt usage
	local f=$1 s=$2 o=$3 usage=$'\n'$4 args=()
	# flock's -c/--command comes after FILE, as flock(1)'s (FILE -c CMD):
	# given there it runs CMD with the shell, CMD's status coming back
	if [ "$f" = flock ] && { [ "$o" = -c ] || [ "$o" = --command ]; }; then
		local rc=0
		(cd "$t" && timeout 20 "$bin" flock "$t/c-probe" "$o" 'exit 7' </dev/null >/dev/null 2>&1) || rc=$?
		[ "$rc" = 7 ] || { echo "holdfast flock FILE $o 'exit 7': exit $rc"; return 1; }
		return 0
	fi
	[ -n "$s" ] && args+=("$s")
	args+=("$o")
	# bash's own matching, no grep per probe (the usage starts with a
	# newline: a non-option character before the first line)
	local takes='[^A-Za-z0-9-]'$o'(,| |=)[A-Z]+' takes2='[^A-Za-z0-9-]'$o' ([A-Z]+|[a-z-]+ [A-Z]+)'
	if [[ $usage =~ $takes ]]; then args+=(x); fi
	if [[ $usage =~ $takes2 ]]; then
		[ "${args[-1]}" = x ] || args+=(x)
	fi
	args+=(--zz-probe)
	local err line unknown="('|: )$o('| |\$)"
	err=$(cd "$t" && timeout 20 "$bin" "$f" "${args[@]}" </dev/null 2>&1 >/dev/null) || true
	while IFS= read -r line; do
		if [[ ${line,,} == *unknown* && $line =~ $unknown ]]; then
			echo "$err"
			return 1
		fi
	done <<<"$err"
	return 0
}

# ---- 1. --help, -h, -V, --version everywhere -------------------------------
for v in -V --version; do
	[ "$("$bin" $v)" = "holdfast $version" ] || fail "holdfast $v"
	ok
done
[ "$("$bin" --help | head -1)" = "usage: holdfast COMMAND [ARGS]" ] || fail "holdfast --help"
for f in $families; do
	for s in "" ${subs[$f]}; do
		cmd="$f${s:+ $s}"
		for h in --help -h; do
			out=$("$bin" $cmd $h 2>"$t/err") && rc=0 || rc=$?
			[ "$rc" = 0 ] && [ ! -s "$t/err" ] && [ "${out#usage: holdfast $f}" != "$out" ] ||
				fail "holdfast $cmd $h: exit $rc, stdout '${out%%$'\n'*}', stderr '$(cat "$t/err")'"
			ok
		done
		# flock names itself as flock(1) does ("flock from util-linux ...")
		want="holdfast $version"
		[ "$f" = flock ] && want="holdfast flock (holdfast $version)"
		for v in -V --version; do
			out=$("$bin" $cmd $v 2>"$t/err") && rc=0 || rc=$?
			[ "$rc" = 0 ] && [ "$out" = "$want" ] && [ ! -s "$t/err" ] ||
				fail "holdfast $cmd $v: exit $rc, '$out' $(cat "$t/err")"
			ok
		done
	done
done

# ---- 2. every parser option is in --help -----------------------------------
for f in $families; do
	"$bin" $f --help | opts >"$t/help-$f"
	for s in ${subs[$f]}; do
		"$bin" $f $s --help | opts | cmp -s - "$t/help-$f" || fail "$f $s --help differs from $f --help"
	done
	parser_opts "$f" >"$t/parser-$f"
	[ -s "$t/parser-$f" ] || fail "no options found in ${source_of[$f]}"
	missing=$(comm -23 "$t/parser-$f" "$t/help-$f" | grep -vx -- '--naive-take' || true)
	[ -z "$missing" ] || fail "holdfast $f: the parser accepts options its --help does not show:" $missing
	ok
done
# the top level
main_parser=$(grep -oE 'strcmp\(c, "-[-a-zA-Z]+"\)' "$src/src/cli/main.c" | sed -E 's/.*"(-[^"]*)".*/\1/' | sort -u)
"$bin" --help | opts >"$t/help-main"
missing=$(comm -23 <(echo "$main_parser") "$t/help-main")
[ -z "$missing" ] || fail "holdfast --help does not show:" $missing
ok

# ---- 3. every option --help shows is accepted ------------------------------
common="-h --help -V --version"
for f in $families; do
	usage=$("$bin" $f --help)
	for s in ${subs[$f]:-""}; do
		if [ -n "$s" ]; then
			shown=$( (synopsis "$f" "$s" <<<"$usage"; echo "$common") | opts)
			[ -n "$(synopsis "$f" "$s" <<<"$usage")" ] || fail "no synopsis line for $f $s"
		else
			shown=$(cat "$t/help-$f")
		fi
		for o in $shown; do
			[ "$f $o" = "selftest --naive-take" ] && continue # internal, documented as such
			accepts "$f" "$s" "$o" "$usage" || fail "holdfast $f $s: --help shows $o, the parser calls it unknown"
			ok
		done
	done
done

# ---- 4. manual pages -------------------------------------------------------
render() { groff -man -Tascii -P-c -P-b -P-u -rLL=3000n "$1" 2>/dev/null; }
for page in holdfast.1 holdfast-session.1 holdfast-lock.1 holdfast-scope.1 holdfast-run.1 holdfast-edit.1 \
	holdfast-flock.1 holdfast-list.1 holdfast.7; do
	p=$build/$page
	[ -f "$p" ] || { fail "$page not configured in $build"; continue; }
	grep -q "\"holdfast $version\"" "$p" || fail "$page does not say holdfast $version"
	w=$(groff -ww -z -man "$p" 2>&1) || true
	[ -z "$w" ] || fail "groff -ww $page: $w"
	if command -v man >/dev/null; then
		w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$p" 2>&1 >/dev/null) || true
		[ -z "$w" ] || fail "man --warnings -l $page: $w"
	fi
	[ "$(render "$p" | wc -l)" -gt 20 ] || fail "$page renders to almost nothing"
	ok
done
for f in session lock scope run edit flock list; do
	render "$build/holdfast-$f.1" | opts >"$t/man-$f"
	if ! cmp -s "$t/man-$f" "$t/help-$f"; then
		fail "holdfast-$f(1) and 'holdfast $f --help' name different options" \
			"(< only in the page, > only in --help):" $(diff "$t/man-$f" "$t/help-$f" | grep '^[<>]' | tr -d ' ')
	fi
	ok
done
missing=$(comm -23 "$t/help-main" <(render "$build/holdfast.1" | opts))
[ -z "$missing" ] || fail "holdfast(1) lacks options of holdfast --help:" $missing
ok

# ---- 6. the manual in docs/ --------------------------------------------------
# One markdown page per manual page, kept equal to it: its "## Synopsis"
# block is the page's SYNOPSIS, its "## Options" table is the page's OPTIONS
# and its "## Exit status" section opens with the page's EXIT STATUS (a table
# row "| CODE | TEXT |" reads as the page's ".TP CODE TEXT"); it names every
# option of the command's --help, and no option that no command has.
man_section() { # page SECTION: its text, rendered
	render "$build/$1" | awk -v s="$2" '/^[A-Z][A-Z ]*$/ { on = ($0 == s); next } on'
}
md_section() { # file HEADING: the section's lines, up to the next "## "
	awk -v h="## $2" '$0 == h { on = 1; next } /^## / { on = 0 } on' "$1"
}
squeeze() { tr -s ' \t\n' '   ' | sed 's/^ //; s/ $//'; }
# markdown to the words a rendered page shows: no code spans, emphasis or
# table rules; cells separated by blanks
md_words() {
	sed -E '/^```/d; /^\| *(code|option) *\|/d; /^\|[- |]+\|$/d; s/`//g; s/\*\*//g; s/\\\|/\x01/g; s/\|/ /g; s/\x01/|/g' |
		squeeze
}
cat "$t"/help-* | sort -u >"$t/help-all"
# what every command shares is told once, in docs/holdfast.md (-h, -V) and
# docs/etcd.md (the backend's options); the pages quote other programs' options
printf '%s\n' -h --help -V --version --backend --ttl --etcd-ca --etcd-password-file --etcd-timeout \
	--etcd-user >"$t/shared-opts"
missing=$(comm -23 <(sort "$t/shared-opts") <(cat "$src/docs/holdfast.md" "$src/docs/etcd.md" | opts))
[ -z "$missing" ] || fail "docs/holdfast.md and docs/etcd.md do not name:" $missing
printf '%s\n' -A -m -fdx --git-common-dir -a -exec -r --mount --js >"$t/foreign-opts" # git's, rsync's, find's, read's, unshare's; an abbreviation
for page in holdfast holdfast-session holdfast-lock holdfast-scope holdfast-run holdfast-edit \
	holdfast-flock holdfast-list; do
	d=$src/docs/$page.md
	[ -f "$d" ] || { fail "docs/$page.md is missing (the manual of $page(1))"; continue; }
	want=$(man_section "$page.1" SYNOPSIS | squeeze)
	got=$(md_section "$d" Synopsis | awk '/^```/ { n++; next } n == 1' | squeeze)
	[ -n "$want" ] && [ "$got" = "$want" ] ||
		fail "docs/$page.md's Synopsis is not $page(1)'s: '$got' against '$want'"
	want=$(man_section "$page.1" "EXIT STATUS" | squeeze)
	got=$(md_section "$d" "Exit status" | md_words)
	[ -n "$want" ] && [ "${got#"$want"}" != "$got" ] ||
		fail "docs/$page.md's Exit status does not open with $page(1)'s: '${got:0:300}' against '$want'"
	want=$(man_section "$page.1" OPTIONS | squeeze)
	got=$(md_section "$d" Options | md_words)
	[ -n "$want" ] && [ "$got" = "$want" ] ||
		fail "docs/$page.md's Options are not $page(1)'s: '${got:0:300}' against '${want:0:300}'"
	f=${page#holdfast-}
	[ "$f" = holdfast ] && f=main
	opts <"$d" >"$t/doc-$f"
	missing=$(comm -23 "$t/help-$f" "$t/doc-$f" | grep -vxF -f "$t/shared-opts" || true)
	[ -z "$missing" ] || fail "docs/$page.md does not name options of its --help:" $missing
	unknown=$(comm -13 "$t/help-all" "$t/doc-$f" | grep -vxF -f "$t/foreign-opts" || true)
	[ -z "$unknown" ] || fail "docs/$page.md names options no command has:" $unknown
	ok
done

# ---- 5. completions --------------------------------------------------------
comp_bash=$src/completions/holdfast.bash
touch "$t/somefile"
mkdir "$t/somedir"
# bash: COMPREPLY for a command line (words; the last is the one completed)
bash_complete() { # with_bash_completion word...
	local bc=$1
	shift
	bash --norc --noprofile -c '
		[ "$1" = yes ] && . /usr/share/bash-completion/bash_completion
		. "$2"
		shift 2
		COMP_WORDS=("$@")
		COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"
		COMP_POINT=${#COMP_LINE}
		_holdfast holdfast "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		printf "%s\n" "${COMPREPLY[@]}"' bash "$bc" "$comp_bash" "$@" | sort -u
}
modes=no
[ -f /usr/share/bash-completion/bash_completion ] && modes="no yes"
for bc in $modes; do
	got=$(bash_complete $bc holdfast "" | tr '\n' ' ')
	want=$(printf '%s\n' $families $common | sort -u | tr '\n' ' ')
	[ "$got" = "$want" ] || fail "bash ($bc bash-completion): 'holdfast ' offers '$got', not '$want'"
	ok
	for f in session lock scope; do
		shown=$("$bin" $f --help | awk -v f="$f" '$0 ~ "^(usage:)? +holdfast " f " " { print ($1 == "usage:") ? $4 : $3 }' | sort -u | tr '\n' ' ')
		got=$(bash_complete $bc holdfast $f "" | grep -v '^-' | tr '\n' ' ')
		[ "$got" = "$shown" ] || fail "bash: 'holdfast $f ' offers '$got'; --help shows '$shown'"
		ok
	done
	for f in $families; do
		usage=$("$bin" $f --help)
		for s in ${subs[$f]:-""}; do
			got=$(bash_complete $bc holdfast $f $s -)
			[ -n "$got" ] || { fail "bash: nothing for 'holdfast $f $s -'"; continue; }
			extra=$(comm -23 <(echo "$got") "$t/help-$f")
			[ -z "$extra" ] || fail "bash: 'holdfast $f $s -' offers options --help does not show:" $extra
			if [ -n "$s" ]; then
				want=$( (synopsis "$f" "$s" <<<"$usage"; echo "$common") | opts)
			else
				want=$(grep -vx -- --naive-take "$t/help-$f")
			fi
			missing=$(comm -13 <(echo "$got") <(echo "$want"))
			[ -z "$missing" ] || fail "bash: 'holdfast $f $s -' does not offer:" $missing
			if [ $bc = no ]; then
				for o in $got; do
					accepts "$f" "$s" "$o" "$usage" || fail "bash offers $o for '$f $s', the parser calls it unknown"
				done
				printf '%s\n' "$got" >"$t/bash-$f-$s"
			fi
			ok
		done
	done
	bash_complete $bc holdfast lock acquire some | grep -qx somefile || fail "bash: no file for lock acquire's PATH"
	bash_complete $bc holdfast run --lock some | grep -qx somefile || fail "bash: no file after run --lock"
	[ -z "$(bash_complete $bc holdfast session take --lane "")" ] || fail "bash: offers words for --lane LANE"
	bash_complete $bc holdfast run --lock L -- ech | grep -qx echo || fail "bash: no command after run ... --"
	bash_complete $bc holdfast list some | grep -qx somedir || fail "bash: no directory for list's DIR"
	bash_complete $bc holdfast list some | grep -qx somefile && fail "bash: a file offered for list's DIR"
	bash_complete $bc holdfast flock some | grep -qx somefile || fail "bash: no file for flock's FILE"
	bash_complete $bc holdfast flock -w 10 L ech | grep -qx echo || fail "bash: no command after flock ... FILE"
	bash_complete $bc holdfast flock -n L echo some | grep -qx somefile || fail "bash: no file for flock FILE CMD's ARG"
	[ -z "$(bash_complete $bc holdfast flock L -c "")" ] || fail "bash: offers words for flock FILE -c CMD"
	ok
done

if command -v zsh >/dev/null; then
	zsh -n "$src/completions/_holdfast" || fail "zsh -n completions/_holdfast"
	for f in $families; do
		for s in ${subs[$f]:-""}; do
			key="$f${s:+ $s}"
			got=$(zsh -fc '. "$1"; _holdfast_opts "$2"' zsh "$src/completions/_holdfast" "$key" | tr ' ' '\n' | sort -u)
			cmp -s <(echo "$got") "$t/bash-$f-$s" || fail "zsh offers other options than bash for '$key':" $(diff <(echo "$got") "$t/bash-$f-$s" | grep '^[<>]' | tr -d ' ')
			ok
		done
		got=$(zsh -fc '. "$1"; _holdfast_subs "$2"' zsh "$src/completions/_holdfast" "$f" | tr ' ' '\n' | sed '/^$/d' | sort)
		[ "$got" = "$(printf '%s\n' ${subs[$f]} | sed '/^$/d' | sort)" ] || fail "zsh: the subcommands of $f: $got"
	done
else
	echo "help.sh: zsh not installed: its completion not checked" >&2
fi

if command -v fish >/dev/null; then
	fish_comp=$src/completions/holdfast.fish
	fish -n "$fish_comp" || fail "fish -n completions/holdfast.fish"
	fish_complete() { HOME=$t fish --no-config -c 'source $argv[1]; complete -C $argv[2]' "$fish_comp" "$1" | cut -f1 | sort -u; }
	got=$(fish_complete "holdfast " | tr '\n' ' ')
	[ "$got" = "$(printf '%s\n' $families | sort | tr '\n' ' ')" ] || fail "fish: 'holdfast ' offers '$got'"
	for f in $families; do
		for s in ${subs[$f]:-""}; do
			got=$(fish_complete "holdfast $f ${s:+$s }-")
			cmp -s <(echo "$got") "$t/bash-$f-$s" || fail "fish offers other options than bash for '$f $s':" $(diff <(echo "$got") "$t/bash-$f-$s" | grep '^[<>]' | tr -d ' ')
			ok
		done
		if [ -n "${subs[$f]}" ]; then
			got=$(fish_complete "holdfast $f " | grep -v '^-' | tr '\n' ' ')
			[ "$got" = "$(printf '%s\n' ${subs[$f]} | sort | tr '\n' ' ')" ] || fail "fish: 'holdfast $f ' offers '$got'"
		fi
	done
else
	echo "help.sh: fish not installed: its completion not checked" >&2
fi

if [ "$failures" -gt 0 ]; then
	echo "help.sh: $failures failed, $checks passed" >&2
	exit 1
fi
echo "help.sh: $checks checks passed"

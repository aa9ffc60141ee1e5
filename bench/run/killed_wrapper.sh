#!/usr/bin/env bash
# killed_wrapper.sh HOLDFAST DIR - a wrapper that holds a lock for a command
# is SIGKILLed while the command runs. Does a second `-n` acquirer get in
# while the command still runs (two holders)? holdfast run (the lock names
# the command's pid) beside dotlockfile (the lock names dotlockfile's own
# pid: anchors-peers.md, "SIGKILL of dotlockfile").
set -u
HF=$1
work=$2
is_gone() { # no such process, or a zombie (exited, never reaped)
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 0
	[ -z "$st" ] || [ "$st" = Z ]
}

scenario() { # NAME LOCKCMD... -- (the lock command must end with CMD)
	local name=$1 lockpath=$2 second=$3
	shift 3
	local ready=$work/kw.$name.ready go=$work/kw.$name.go
	mkfifo "$ready" "$go"
	"$@" sh -c "echo \$\$ > '$ready'; read x < '$go'" 2>/dev/null &
	local wrapper=$!
	local cmd
	read -r cmd <"$ready"
	kill -9 "$wrapper"
	wait "$wrapper" 2>/dev/null
	local rc
	$second >/dev/null 2>&1
	rc=$?
	echo x >"$go"
	while ! is_gone "$cmd"; do sleep 0.01; done
	local rc_after
	$second >/dev/null 2>&1
	rc_after=$?
	if [ "$rc" = 0 ]; then
		verdict="a second holder got in while CMD ran (two holders)"
	else
		verdict="refused while CMD ran"
	fi
	printf '   %-12s second acquirer while CMD runs: exit %s (%s); after CMD ended: exit %s\n' \
		"$name" "$rc" "$verdict" "$rc_after"
	rm -rf "$ready" "$go" "$lockpath"
}

scenario holdfast "$work/kw.L" "$HF run -n --lock $work/kw.L -- true" \
	"$HF" run --lock "$work/kw.L" --
if command -v dotlockfile >/dev/null 2>&1; then
	scenario dotlockfile "$work/kw.D" "dotlockfile -l -p -r 0 $work/kw.D true" \
		dotlockfile -l -p -r 0 "$work/kw.D"
else
	echo "   dotlockfile: skipped (liblockfile-bin not installed)"
fi

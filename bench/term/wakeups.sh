#!/bin/bash
# The wake-ups an idle waiter costs with and without the status line
# (waitline.c, WL4): voluntary context switches of every thread of a
# `holdfast lock acquire -w 60` waiting 10 s for a held lock, on a pipe and
# on a terminal (script(1)). Usage: bench/term/wakeups.sh BUILD/holdfast
# Prints one line per mode; counts, not timings (indicative on a loaded machine).
set -u
run() { local B mode=$2 d S O P W a b; B=$(realpath "$1"); d=$(mktemp -d); cd "$d" || return
sleep 1000 & S=$!
$B lock acquire L --pid $S >/dev/null 2>&1
sleep 1000 & O=$!
if [ $mode = tty ]; then
  script -qfc "$B lock acquire L --pid $O -w 60" /dev/null >/dev/null 2>&1 & P=$!
else
  $B lock acquire L --pid $O -w 60 >/dev/null 2>&1 & P=$!
fi
sleep 2
find_hf() { local p=$1; [ "$(cat /proc/$p/comm)" = holdfast ] && { echo $p; return; }; for c in $(pgrep -P $p); do find_hf $c; done; }
W=$(find_hf $P)
sum() { cat /proc/$W/task/*/status | awk '/^voluntary_ctxt_switches/ { s += $2 } END { print s }'; }
a=$(sum); sleep 10; b=$(sum)
echo "$mode: $((b - a)) wake-ups in 10 s (pid $W, threads: $(ls /proc/$W/task | wc -l))"
kill $S $O; wait 2>/dev/null; cd /; rm -rf "$d"
}
bin=$(realpath "$1")
run "$bin" pipe; run "$bin" tty

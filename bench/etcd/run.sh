#!/usr/bin/env bash
# bench/etcd/run.sh BUILD_DIR - the directory lock on etcd, side by side in
# one run on one loopback member started here (Debian's etcd-server, a
# throwaway data dir, stopped by pid):
#   - acquire+release through the library ÷ the bare etcd requests it is
#     made of (lease grant, put-if-absent txn reading the epoch key, lease
#     revoke on one reused connection; goal: within 1.2x);
#   - what the fence epoch costs (etcdlock.c EL10): those bare requests ÷
#     the same without the epoch in the txn (before EL10);
#   - the same ÷ etcd's own lock service (/v3/lock: grant, lock, unlock,
#     revoke);
#   - hf_scope register+release on etcd ÷ the bare requests it is made of
#     (lease grant, range of the prefix, txn, lease revoke on one
#     reused connection; goal: within 1.2x);
#   - `holdfast run --lock L --backend etcd://... -- true` ÷ `etcdctl lock
#     L true`, as whole processes;
#   - handoff on release: a waiter woken by the watch ÷ one that polls every
#     POLL_MS (default 100) ms (the median).
# CYCLES (default 300), PROCS (50), HANDOFFS (15) change the sizes. Timing
# on a shared machine is indicative only.
set -u
build=$(cd "${1:-build}" && pwd)
b="$build/bench/etcd/bench-etcd"
cycles=${CYCLES:-300}
procs=${PROCS:-50}
handoffs=${HANDOFFS:-15}
pollms=${POLL_MS:-100}
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cp=$(port)
pp=$(port)
while [ "$pp" = "$cp" ]; do pp=$(port); done
d=$(mktemp -d /tmp/hf-bench-etcd.XXXXXX)
etcd --name b --data-dir "$d/data" --listen-client-urls "http://127.0.0.1:$cp" \
	--advertise-client-urls "http://127.0.0.1:$cp" --listen-peer-urls "http://127.0.0.1:$pp" \
	--initial-advertise-peer-urls "http://127.0.0.1:$pp" --initial-cluster "b=http://127.0.0.1:$pp" \
	--initial-cluster-state new >"$d/etcd.log" 2>&1 &
epid=$!
trap 'kill $epid 2>/dev/null; wait $epid 2>/dev/null; rm -rf "$d"' EXIT
uri="etcd://127.0.0.1:$cp"
for _ in $(seq 600); do
	curl -sf "http://127.0.0.1:$cp/health" >/dev/null 2>&1 && break
	sleep 0.05
done
curl -sf "http://127.0.0.1:$cp/health" >/dev/null || { echo "etcd did not start" >&2; cat "$d/etcd.log" >&2; exit 1; }

# warm-up, then the two sides alternately, 3 rounds each
"$b" lib 20 "$uri" >/dev/null && "$b" bare 20 "$uri" >/dev/null
"$b" scopelib 20 "$uri" >/dev/null && "$b" scopebare 20 "$uri" >/dev/null
lib=0 bare=0 bare0=0 v3=0 slib=0 sbare=0
for _ in 1 2 3; do
	lib=$((lib + $("$b" lib "$cycles" "$uri" | cut -d' ' -f2)))
	bare=$((bare + $("$b" bare "$cycles" "$uri" | cut -d' ' -f2)))
	bare0=$((bare0 + $("$b" bare-noepoch "$cycles" "$uri" | cut -d' ' -f2)))
	v3=$((v3 + $("$b" v3lock "$cycles" "$uri" | cut -d' ' -f2)))
	slib=$((slib + $("$b" scopelib "$cycles" "$uri" | cut -d' ' -f2)))
	sbare=$((sbare + $("$b" scopebare "$cycles" "$uri" | cut -d' ' -f2)))
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "etcd: acquire+release, library        $((lib / 3)) us"
echo "etcd: the bare requests it is made of $((bare / 3)) us  -> $(ratio "$lib" "$bare")x (goal <= 1.2x)"
echo "etcd: the same without the epoch     $((bare0 / 3)) us  -> the epoch costs $(ratio "$bare" "$bare0")x"
echo "etcd: etcd's /v3/lock service         $((v3 / 3)) us  -> library $(ratio "$lib" "$v3")x of it"
echo "etcd: scope register+release, library $((slib / 3)) us"
echo "etcd: the bare requests it is made of $((sbare / 3)) us  -> $(ratio "$slib" "$sbare")x (goal <= 1.2x)"

hf="$build/holdfast"
t0=$(date +%s%N)
for _ in $(seq "$procs"); do "$hf" run --lock /bench/run.lock --backend "$uri" -- true || exit 1; done
t1=$(date +%s%N)
for _ in $(seq "$procs"); do ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:$cp" lock /bench/ctl true >/dev/null || exit 1; done
t2=$(date +%s%N)
run=$(((t1 - t0) / procs / 1000))
ctl=$(((t2 - t1) / procs / 1000))
echo "etcd: holdfast run --lock -- true     $run us per process"
echo "etcd: etcdctl lock L true             $ctl us per process -> holdfast $(ratio "$run" "$ctl")x of it"

w=$("$b" handoff "$handoffs" "$uri" | cut -d' ' -f2)
p=$("$b" poll "$handoffs" "$uri" "$pollms" | cut -d' ' -f2)
echo "etcd: handoff on release, watch       $w us (median)"
echo "etcd: handoff, polling every ${pollms} ms   $p us (median) -> watch $(ratio "$w" "$p")x of it"

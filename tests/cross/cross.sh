#!/usr/bin/env bash
# tests/cross/cross.sh BUILD_DIR - one lock across every language: held from
# Node, it is refused to Rust, Python and the CLI, each naming the Node
# process; once that process is SIGKILLed, each of them takes it (the dead
# owner's lock reaped at once), with fences strictly greater than Node's.
# Then the same round on etcd (an etcd of this script's own, started and
# killed by pid by tests/cross/etcd.sh: free loopback ports, its data in the
# temp dir): a lock held from
# Node with backend etcd://... is refused to Rust, Python and the CLI naming
# Node, and taken by each with growing fences (the epoch + the key's create_revision)
# once Node is SIGKILLed (a dead owner on this kernel is reaped at once).
# Between the two, tests/cross/modes.sh: shared readers from Node, Rust,
# Python, sh and bash at once, a CLI writer entering after the last - on the
# file system and on this etcd (HOLDFAST_CROSS_ETCD).
# Run by `make test` after the bindings' own tests (which build the Node addon
# and the Rust examples this uses).
set -u
build=$(cd "${1:-build}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
hf="$build/holdfast"
rust_holder="$build/rust-target/debug/examples/holder"
py=${PYTHON:-/usr/bin/python3}
fails=0
fail() { echo "cross: FAIL: $*" >&2; fails=$((fails + 1)); }

. "$root/tests/cross/etcd.sh"

d=$(mktemp -d /tmp/holdfast-cross.XXXXXX) || exit 1
node_pid=
cleanup() {
	if [ -n "$node_pid" ]; then kill -KILL "$node_pid" 2>/dev/null; wait "$node_pid" 2>/dev/null; fi
	cross_etcd_stop
	rm -rf "$d"
}
trap cleanup EXIT
L="$d/shared.lock"
[ -x "$rust_holder" ] || { echo "cross: $rust_holder missing (bindings/rust/test.sh builds it)"; exit 1; }

# Node holds it; its first line says so ("held FENCE"), through a FIFO so the
# shell knows Node's pid before anything reads.
mkfifo "$d/node.out"
node -e '
const { Lock } = require(process.argv[1]);
const l = new Lock(process.argv[2]);
l.acquireSync();
console.log("held " + l.fence);
setInterval(() => {}, 1 << 30);
' "$root/bindings/node" "$L" >"$d/node.out" &
node_pid=$!
read -r word node_fence <"$d/node.out"
[ "$word" = held ] || { echo "cross: node did not take the lock"; exit 1; }
words="pid $node_pid (node)"

# Rust: refused, naming Node
out=$("$rust_holder" lock "$L" </dev/null); rc=$?
[ $rc = 1 ] || fail "rust: exit $rc, expected 1 (held)"
case $out in held\ *"$words"*) ;; *) fail "rust: '$out' does not name $words" ;; esac

# Python: refused, naming Node
out=$(HOLDFAST_LIB="$build/libholdfast.so" PYTHONPATH="$root/bindings/python/src" "$py" -c '
import sys, holdfast_locks as hf
try:
    hf.Lock(sys.argv[1]).acquire()
except hf.Held as e:
    print("held", e.holder["pid"], e.holder.get("comm"), "|", e)
    sys.exit(1)
print("acquired")
' "$L"); rc=$?
[ $rc = 1 ] || fail "python: exit $rc ('$out'), expected 1 (held)"
case $out in "held $node_pid node |"*"$words"*) ;; *) fail "python: '$out' does not name $words" ;; esac

# The CLI: refused (exit 1), naming Node; status and check agree
err=$("$hf" lock acquire -n "$L" --pid $$ 2>&1 >/dev/null); rc=$?
[ $rc = 1 ] || fail "cli: lock acquire -n exit $rc, expected 1"
case $err in *"$words"*) ;; *) fail "cli: '$err' does not name $words" ;; esac
"$hf" lock check "$L"; rc=$?
[ $rc = 0 ] || fail "cli: lock check exit $rc while Node holds it, expected 0"
st=$("$hf" lock status "$L")
case $st in held:*"$words"*) ;; *) fail "cli: status '$st'" ;; esac

# Node dies holding it: every language takes it at once, fences growing
kill -KILL "$node_pid"; wait "$node_pid" 2>/dev/null; node_pid=
"$hf" lock check "$L"; rc=$?
[ $rc = 69 ] || fail "cli: lock check exit $rc after Node died, expected 69 (stale)"
out=$("$rust_holder" lock "$L" </dev/null); rc=$?
rust_fence=${out#held }
[ $rc = 0 ] && [ "$rust_fence" -gt "$node_fence" ] 2>/dev/null ||
	fail "rust after node's death: exit $rc, '$out' (node's fence $node_fence)"
out=$(HOLDFAST_LIB="$build/libholdfast.so" PYTHONPATH="$root/bindings/python/src" "$py" -c '
import sys, holdfast_locks as hf
with hf.Lock(sys.argv[1]) as lk:
    print(lk.fence)
' "$L"); rc=$?
[ $rc = 0 ] && [ "$out" -gt "$rust_fence" ] 2>/dev/null ||
	fail "python after node's death: exit $rc, '$out' (rust's fence $rust_fence)"
out=$("$hf" lock acquire -n "$L" --pid $$); rc=$?
[ $rc = 0 ] && [ "${out#* }" -gt "$rust_fence" ] 2>/dev/null || fail "cli after node's death: exit $rc, '$out'"
"$hf" lock release "$L" --token "$out" || fail "cli: release"

# ---- readers from Node, Rust and Python at once, a CLI writer after them ----
# (on the file system and on the etcd of the round below, started here)
cross_etcd_start "$d" || { echo "cross: no etcd"; exit 1; }
HOLDFAST_CROSS_ETCD=$B bash "$root/tests/cross/modes.sh" "$build" || fail "modes.sh (shared readers across languages)"

# ---- the same on etcd ----

E="$d/etcd-shared.lock"
mkfifo "$d/node-etcd.out"
node -e '
const { Lock } = require(process.argv[1]);
const l = new Lock(process.argv[2], { backend: process.argv[3] });
l.acquireSync();
console.log("held " + l.fence);
setInterval(() => {}, 1 << 30);
' "$root/bindings/node" "$E" "$B" >"$d/node-etcd.out" &
node_pid=$!
read -r word node_fence <"$d/node-etcd.out"
[ "$word" = held ] || { echo "cross: node did not take the lock on etcd"; exit 1; }
words="pid $node_pid (node)"
[ ! -e "$E" ] || fail "etcd: the lock made $E on the file system"

out=$("$rust_holder" lock "$E" --backend "$B" </dev/null); rc=$?
[ $rc = 1 ] || fail "etcd rust: exit $rc, expected 1 (held)"
case $out in held\ *"$words"*) ;; *) fail "etcd rust: '$out' does not name $words" ;; esac
out=$(HOLDFAST_LIB="$build/libholdfast.so" PYTHONPATH="$root/bindings/python/src" "$py" -c '
import sys, holdfast_locks as hf
try:
    hf.Lock(sys.argv[1], backend=sys.argv[2]).acquire()
except hf.Held as e:
    print("held", e.holder["pid"], e.holder.get("backend"), "|", e)
    sys.exit(1)
print("acquired")
' "$E" "$B"); rc=$?
[ $rc = 1 ] || fail "etcd python: exit $rc ('$out'), expected 1 (held)"
case $out in "held $node_pid etcd |"*"$words"*) ;; *) fail "etcd python: '$out' does not name $words" ;; esac
err=$("$hf" lock acquire -n "$E" --pid $$ --backend "$B" 2>&1 >/dev/null); rc=$?
[ $rc = 1 ] || fail "etcd cli: lock acquire -n exit $rc, expected 1"
case $err in *"$words"*) ;; *) fail "etcd cli: '$err' does not name $words" ;; esac

kill -KILL "$node_pid"; wait "$node_pid" 2>/dev/null; node_pid=
out=$("$rust_holder" lock "$E" --backend "$B" </dev/null); rc=$?
rust_fence=${out#held }
[ $rc = 0 ] && [ "$rust_fence" -gt "$node_fence" ] 2>/dev/null ||
	fail "etcd rust after node's death: exit $rc, '$out' (node's fence $node_fence)"
out=$(HOLDFAST_LIB="$build/libholdfast.so" PYTHONPATH="$root/bindings/python/src" "$py" -c '
import sys, holdfast_locks as hf
with hf.Lock(sys.argv[1], backend=sys.argv[2]) as lk:
    print(lk.fence)
' "$E" "$B"); rc=$?
[ $rc = 0 ] && [ "$out" -gt "$rust_fence" ] 2>/dev/null ||
	fail "etcd python after node's death: exit $rc, '$out' (rust's fence $rust_fence)"
out=$("$hf" lock acquire -n "$E" --pid $$ --backend "$B"); rc=$?
[ $rc = 0 ] && [ "${out#* }" -gt "$rust_fence" ] 2>/dev/null || fail "etcd cli after node's death: exit $rc, '$out'"
"$hf" lock release "$E" --token "$out" --backend "$B" || fail "etcd cli: release"

[ $fails = 0 ] && echo "cross: a lock held from Node refused to Rust, Python and the CLI naming it, and taken by each once it died - on the file system and on etcd"
exit $((fails > 0))

#!/usr/bin/env bash
# tests/cross/cross.sh BUILD_DIR - one lock across every language: held from
# Node, it is refused to Rust, Python and the CLI, each naming the Node
# process; once that process is SIGKILLed, each of them takes it (the dead
# owner's lock reaped at once), with fences strictly greater than Node's.
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

d=$(mktemp -d /tmp/holdfast-cross.XXXXXX) || exit 1
node_pid=
cleanup() {
	if [ -n "$node_pid" ]; then kill -KILL "$node_pid" 2>/dev/null; wait "$node_pid" 2>/dev/null; fi
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

[ $fails = 0 ] && echo "cross: a lock held from Node refused to Rust, Python and the CLI naming it, and taken by each once it died"
exit $((fails > 0))

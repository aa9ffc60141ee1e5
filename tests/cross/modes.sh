#!/usr/bin/env bash
# tests/cross/modes.sh BUILD_DIR - readers of one lock from three languages at
# once: Node (Lock(path, {shared: true})), Rust (Lock::read, through
# examples/holder) and Python (holdfast_locks' Lock(shared=True) when it has
# it, else libholdfast through ctypes: HF_OPT_MODE = HF_MODE_SHARED) all hold
# it together; a CLI writer (`holdfast lock acquire -w`) waits at the lock
# while any of them reads, and enters once the last one has released, its
# fence above every reader's. Each reader holds until its stdin (a FIFO this
# script keeps open) closes; each says "held FENCE" on a FIFO; the writer's
# wait is seen in `lock status --json` ("waiting": true), never by sleeping.
# Run by cross.sh (the file system only: etcd refuses modes for now).
set -u
build=$(cd "${1:-build}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
hf="$build/holdfast"
rust_holder="$build/rust-target/debug/examples/holder"
py=${PYTHON:-/usr/bin/python3}
fails=0
fail() { echo "cross modes: FAIL: $*" >&2; fails=$((fails + 1)); }

d=$(mktemp -d /tmp/holdfast-cross-modes.XXXXXX) || exit 1
pids=()
fds=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$d"
}
trap cleanup EXIT
trap 'exit 1' TERM INT
L="$d/data.lock"
[ -x "$rust_holder" ] || { echo "cross modes: $rust_holder missing (bindings/rust/test.sh builds it)"; exit 1; }

# start NAME CMD...: CMD reads from the FIFO in.NAME (held open here: fd
# in_NAME) and writes to out.NAME (read here: fd out_NAME); its pid in pid_NAME.
start() {
	local name=$1
	shift
	mkfifo "$d/in.$name" "$d/out.$name"
	exec {fd}<>"$d/in.$name"
	printf -v "in_$name" %s "$fd"
	# the child keeps none of this script's FIFO descriptors: another
	# reader's stdin left open in it would never see its end
	(for f in "${fds[@]}" "$fd"; do eval "exec $f>&-"; done; exec "$@") <"$d/in.$name" >"$d/out.$name" &
	printf -v "pid_$name" %s "$!"
	pids+=("$!")
	fds+=("$fd")
	exec {fd}<"$d/out.$name"
	printf -v "out_$name" %s "$fd"
	fds+=("$fd")
}
# held NAME: its "held FENCE" line (bounded: 30 s); the fence in fence_NAME
held() {
	local fd=out_$1 word f
	read -r -t 30 -u "${!fd}" word f || { fail "$1 said nothing"; return 1; }
	[ "$word" = held ] || { fail "$1: '$word $f'"; return 1; }
	printf -v "fence_$1" %s "$f"
}
# release NAME: close its stdin; it releases and exits 0
release() {
	local fd=in_$1 pid=pid_$1
	eval "exec ${!fd}>&-"
	wait "${!pid}" || fail "$1 exited $? on release"
}
status() { "$hf" lock status "$L" --json; }

start node node -e '
const { Lock } = require(process.argv[1]);
const l = new Lock(process.argv[2], { shared: true });
l.acquireSync({ wait: Infinity });
console.log("held " + l.fence);
process.stdin.resume();
process.stdin.on("end", () => { l.release(); process.exit(0); });
' "$root/bindings/node" "$L"
start rust "$rust_holder" read "$L"
start python env HOLDFAST_LIB="$build/libholdfast.so" PYTHONPATH="$root/bindings/python/src" "$py" -c '
import ctypes, os, sys
p = sys.argv[1]
try:
    import holdfast_locks as hf
    lk = hf.Lock(p, shared=True)
except TypeError:  # a holdfast_locks without modes: the C API
    lk = None
if lk is not None:
    lk.acquire(timeout=-1) if "timeout" in lk.acquire.__code__.co_varnames else lk.acquire()
    fence, release = lk.fence, lk.release
else:
    lib = ctypes.CDLL(os.environ["HOLDFAST_LIB"])
    lib.hf_lock_new.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.hf_lock_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64]
    for f in ("hf_lock_acquire", "hf_lock_release", "hf_lock_free", "hf_lock_fence"):
        getattr(lib, f).argtypes = [ctypes.c_void_p]
    lib.hf_lock_fence.restype = ctypes.c_uint64
    h = ctypes.c_void_p()
    HF_OPT_WAIT_MS, HF_OPT_MODE, HF_MODE_SHARED = 1, 14, 1  # holdfast.h (bindings/rust/tests/api.rs checks them)
    assert lib.hf_lock_new(p.encode(), ctypes.byref(h)) == 0
    assert lib.hf_lock_set(h, HF_OPT_MODE, HF_MODE_SHARED) == 0
    assert lib.hf_lock_set(h, HF_OPT_WAIT_MS, -1) == 0
    rc = lib.hf_lock_acquire(h)
    assert rc == 0, rc
    fence = lib.hf_lock_fence(h)
    def release():
        assert lib.hf_lock_release(h) == 0
        lib.hf_lock_free(h)
print("held", fence, flush=True)
sys.stdin.read()
release()
' "$L"
for r in node rust python; do held $r || exit 1; done

# all three hold it at once, each its own holder in the status
st=$(status)
n=$(printf '%s' "$st" | "$py" -c '
import json, sys
s = json.load(sys.stdin)
pids = sorted(h["pid"] for h in s["holders"] if h["mode"] == "shared" and h["state"] == "held")
print(s["mode"], " ".join(map(str, pids)))')
want="shared $(printf '%s\n' "$pid_node" "$pid_rust" "$pid_python" | sort -n | tr '\n' ' ' | sed 's/ $//')"
[ "$n" = "$want" ] || fail "status: '$n', expected '$want' ($st)"

# a CLI writer waits at the lock (for this shell's life)
(for f in "${fds[@]}"; do eval "exec $f>&-"; done; exec "$hf" lock acquire -w 30 --pid $$ "$L") >"$d/writer.out" &
wpid=$!
pids+=("$wpid")
waiting() { status | "$py" -c 'import json, sys; sys.exit(0 if any(h.get("waiting") for h in json.load(sys.stdin)["holders"]) else 1)'; }
for _ in $(seq 3000); do waiting && break; kill -0 "$wpid" 2>/dev/null || break; done
waiting || fail "the writer is not seen waiting: $(status)"

release node
release rust
kill -0 "$wpid" 2>/dev/null || fail "the writer ended while Python still reads"
waiting || fail "the writer does not wait for Python's reader: $(status)"
release python
wait "$wpid" || fail "the writer: exit $?"
read -r token wfence <"$d/writer.out"
for r in node rust python; do
	f=fence_$r
	[ "${wfence:-0}" -gt "${!f}" ] 2>/dev/null || fail "the writer's fence '$wfence' is not above $r's ${!f}"
done
"$hf" lock release "$L" --token "$token" || fail "cli: release"

[ $fails = 0 ] && echo "cross modes: readers from Node, Rust and Python held one lock at once; a CLI writer waited and entered after the last, above their fences"
exit $((fails > 0))

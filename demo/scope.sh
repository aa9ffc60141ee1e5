#!/usr/bin/env bash
# `make run`, scope part: two agents claim overlapping scopes (one refused,
# naming the other), a delegation chain A -> B -> D, B killed and its scope
# coming back to A. A scratch registry; everything cleaned up at the end.
set -u
HF=${HF:-build/holdfast}
work=$(mktemp -d /dev/shm/hf-demo.XXXXXX)
export HOLDFAST_REGISTRY=$work/registry/scope.lock
unset HOLDFAST_POD
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT

# An "agent" is a process that lives until killed; it owns its scope.
agent() { sleep 600 & pids+=($!); }
say() { printf '\n%s\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; echo "  (exit $?)"; }

mkdir -p "$work/project/src/core" "$work/project/docs"
cd "$work/project"

say "== scope registry: $HOLDFAST_REGISTRY"
say "1. Two agents claim overlapping write scopes: the second is refused, naming the first."
agent; alice=${pids[-1]}
agent; bob=${pids[-1]}
run "$HF" scope register alice src:write:recursive --pid "$alice"
run "$HF" scope register bob ./src/core/../core/:write --pid "$bob"
echo "   Read scopes never conflict:"
run "$HF" scope register bob src:read:recursive docs:write:recursive --pid "$bob"
run "$HF" scope list

say "2. A delegation chain: A holds the project, delegates src to B, B delegates src/core to D."
agent; A=${pids[-1]}
agent; B=${pids[-1]}
agent; D=${pids[-1]}
run "$HF" scope release alice
run "$HF" scope release bob
run "$HF" scope register A .:write:recursive --pid "$A"
run "$HF" scope register B src:write:recursive --pid "$B" --from A
run env HOLDFAST_POD=B "$HF" scope register D src/core:write:recursive --pid "$D"
echo "   A sibling of B cannot take what B holds:"
run "$HF" scope register C src/util:write --pid "$D" --from A
run "$HF" scope effective A
run "$HF" scope check src/core/main.c --pod A
run "$HF" scope check src/core/main.c --pod D

say "3. B is killed (SIGKILL): its scope comes back to A; D is re-parented to A."
gen_b=$("$HF" scope list --json | sed -n 's/.*"name":"B"[^}]*"generation":\([0-9]*\).*/\1/p')
kill -9 "$B"; wait "$B" 2>/dev/null
run "$HF" scope reap
run "$HF" scope list
run "$HF" scope effective A
echo "   B's fencing token (generation $gen_b) is gone; a late write by B would be refused:"
run "$HF" scope check src/x.c --pod B --generation "$gen_b"
run "$HF" scope check src/x.c --pod A

say "4. holdfast run --scope: the scope is the command's while it runs; a nested run delegates."
run "$HF" scope release A
run "$HF" run --scope docs:write:recursive --name writer -- sh -c 'echo "   inside: HOLDFAST_POD=$HOLDFAST_POD"; "$0" run --scope docs/api:write --name helper -- "$0" scope list' "$HF"
echo "   After the command: both released."
run "$HF" scope list
exit 0

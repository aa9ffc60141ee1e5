#!/bin/bash
# tests/install/node.sh - the Node package installs as npm users install
# packages (`make check-install-node`, in check-long):
#
#   1. `npm install --offline <dir>` of bindings/node, in a fresh npm project
#      (from a copy of the repository's sources, so the repository's own
#      bindings/node/build is not rewritten);
#   2. `npm pack` there, then `npm install --offline <tarball>` in another
#      fresh project: the tarball carries libholdfast's C sources
#      (prepack.sh) and its install step compiles them into the addon;
#   3. in a private mount namespace that hides the repository's build
#      directories, /usr/local, the copy the tarball was packed from and any
#      installed libholdfast, node takes and releases a Lock and the
#      proper-lockfile front locks and unlocks a file, from each project;
#      the addon needs no libholdfast (ldd, /proc/self/maps);
#   4. a strict TypeScript file importing holdfast and
#      holdfast/proper-lockfile type-checks against the installed package;
#   5. installed with --ignore-scripts, require names the way out;
#      CC=/nonexistent and NODE_INCLUDE=/nonexistent: the install fails with
#      one message naming the Debian package to install.
#
# Prints, for the report: each install's time and the installed size.
# Needs root (unshare --mount), node, npm, gcc, libjansson-dev,
# libcurl4-openssl-dev (make deps). Leaves nothing behind.
set -euo pipefail
# The developer's overrides would make it another build (build.sh, index.js).
unset HOLDFAST_BUILD HOLDFAST_SYSTEM HOLDFAST_ADDON NODE_INCLUDE CC CFLAGS LDFLAGS
repo=$(cd "$(dirname "$0")/../.." && pwd)
me=tests/install/node.sh
fail() { echo "$me: FAIL: $*" >&2; exit 1; }
for t in node npm unshare; do
	command -v "$t" >/dev/null 2>&1 || fail "$t not found"
done
[ "$(id -u)" = 0 ] || fail "needs root (a private mount namespace)"

tmp=$(mktemp -d /tmp/hft-node-install.XXXXXX)
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
export npm_config_cache=$tmp/npm-cache npm_config_update_notifier=false
# npm's own cache is empty here: --offline fails if anything were fetched.
npm_install() { npm install --offline --no-audit --no-fund --loglevel=error "$@"; }
TIMEFORMAT=%R

# The repository's sources as a clone has them (no build output).
mkdir "$tmp/repo"
tar -C "$repo" --exclude=node_modules --exclude=build --exclude=libholdfast -cf - \
	meson.build include src/base src/lib bindings/node | tar -C "$tmp/repo" -xf -

new_project() {
	mkdir "$1"
	(cd "$1" && npm init -y >/dev/null)
}

# 1. npm install <dir>
new_project "$tmp/dir"
t_dir=$( { time (cd "$tmp/dir" && npm_install "$tmp/repo/bindings/node" >"$tmp/dir.log" 2>&1) ; } 2>&1 ) ||
	{ cat "$tmp/dir.log" >&2; fail "npm install <dir> failed"; }
[ -f "$tmp/dir/node_modules/holdfast/build/holdfast.node" ] || fail "npm install <dir>: no build/holdfast.node"

# 2. npm pack, npm install <tarball>
(cd "$tmp/repo/bindings/node" && npm pack --pack-destination "$tmp" --loglevel=error >"$tmp/pack.log" 2>&1) ||
	{ cat "$tmp/pack.log" >&2; fail "npm pack failed"; }
tgz=$(ls "$tmp"/holdfast-*.tgz)
[ ! -e "$tmp/repo/bindings/node/libholdfast" ] || fail "postpack left bindings/node/libholdfast behind"
new_project "$tmp/tgz"
t_tgz=$( { time (cd "$tmp/tgz" && npm_install "$tgz" >"$tmp/tgz.log" 2>&1) ; } 2>&1 ) ||
	{ cat "$tmp/tgz.log" >&2; fail "npm install <tarball> failed"; }
addon=$tmp/tgz/node_modules/holdfast/build/holdfast.node
[ -f "$addon" ] || fail "npm install <tarball>: no build/holdfast.node"
[ ! -L "$tmp/tgz/node_modules/holdfast" ] || fail "npm install <tarball> made a link"
! grep -i 'warning:' "$tmp/dir.log" "$tmp/tgz.log" || fail "the install's compile warns"
ldd "$addon" >"$tmp/ldd" || fail "ldd $addon"
if grep libholdfast "$tmp/ldd"; then fail "the addon links a libholdfast"; fi

# Installed without its install step: require says what to do.
new_project "$tmp/noscripts"
(cd "$tmp/noscripts" && npm_install --ignore-scripts "$tgz" >/dev/null 2>&1) || fail "npm install --ignore-scripts"
msg=$(cd "$tmp/noscripts" && node -e "require('holdfast')" 2>&1) && fail "require without the addon succeeded"
grep -q 'npm rebuild holdfast' <<<"$msg" || fail "require without the addon said: $msg"

# 3. Where nothing of holdfast is to be seen.
cat >"$tmp/use.js" <<'EOF'
'use strict';
const assert = require('assert');
const fs = require('fs');
const path = require('path');
const dir = fs.mkdtempSync(path.join(process.argv[2], 'use-'));
const { Lock, version } = require('holdfast');
const pkg = process.argv[3]; // where the installed package is (a link's target for <dir>)
assert.strictEqual(path.dirname(require.resolve('holdfast')), pkg);
const l = new Lock(path.join(dir, 'x.lock'));
l.acquireSync();
assert.strictEqual(l.held, true);
assert.strictEqual(Lock.status(path.join(dir, 'x.lock')).state, 'held');
l.release();
assert.strictEqual(l.held, false);
l.close();
const plf = require('holdfast/proper-lockfile');
const file = path.join(dir, 'f');
fs.writeFileSync(file, '');
(async () => {
	const release = await plf.lock(file);
	assert.strictEqual(await plf.check(file), true);
	await assert.rejects(plf.lock(file), (e) => e.code === 'ELOCKED');
	await release();
	assert.strictEqual(await plf.check(file), false);
	const releaseSync = plf.lockSync(file);
	assert.strictEqual(plf.checkSync(file), true);
	releaseSync();
	assert.strictEqual(plf.checkSync(file), false);
	const maps = fs.readFileSync('/proc/self/maps', 'utf8');
	assert.ok(!/libholdfast/.test(maps), 'a libholdfast is mapped');
	assert.ok(maps.includes(pkg + '/build/holdfast.node'), 'the addon is not the installed one');
	fs.rmSync(dir, { recursive: true });
	console.log('ok ' + version());
})().catch((e) => { console.error(e); process.exit(1); });
EOF
node_bin=$(readlink -f "$(command -v node)")
hide="$tmp/repo"
for d in "$repo"/build* "$repo/bindings/node/build" "$repo/bindings/node/node_modules"; do
	[ -d "$d" ] && hide="$hide $d"
done
case $node_bin in
/usr/local/*) hide="$hide /usr/local/lib /usr/local/include" ;; # node itself lives there
*) [ -d /usr/local ] && hide="$hide /usr/local" ;;
esac
blank=""
for f in $(ldconfig -p | sed -n 's/.*libholdfast[^ ]* .*=> //p'); do
	blank="$blank $f"
done
mkdir "$tmp/work"
# $1: the project; the repository copy stays visible for the <dir> install
# (its node_modules/holdfast is a link into it), hidden for the tarball's.
in_clean() {
	local keep=$2
	cp "$tmp/use.js" "$1/use.js"
	# shellcheck disable=SC2016 # the inner script expands its own arguments
	unshare --mount --propagation private -- /bin/sh -eu -c '
		proj=$1 keep=$2 work=$3 pkg=$4; shift 4
		for d in $HIDE; do
			[ "$d" = "$keep" ] && continue
			mount -t tmpfs -o size=1m,mode=0755 hfhide "$d"
		done
		for f in $BLANK; do mount --bind /dev/null "$f"; done
		[ ! -e /usr/local/lib/libholdfast.so.0 ] && [ ! -e "$0/build/libholdfast.so.0" ] || exit 97
		cd "$proj" && exec node use.js "$work" "$pkg"
	' "$repo" "$1" "$keep" "$tmp/work" "$3"
}
out=$(HIDE=$hide BLANK=$blank in_clean "$tmp/dir" "$tmp/repo" "$tmp/repo/bindings/node") || fail "node in the <dir> project (clean namespace)"
[[ $out == "ok "* ]] || fail "<dir> project said: $out"
out=$(HIDE=$hide BLANK=$blank in_clean "$tmp/tgz" none "$tmp/tgz/node_modules/holdfast") || fail "node in the tarball's project (clean namespace)"
[[ $out == "ok "* ]] || fail "tarball project said: $out"

# 4. Strict TypeScript against the installed package's declarations.
tsc=$repo/bindings/node/node_modules/.bin/tsc
types=$repo/bindings/node/node_modules/@types
if [ ! -x "$tsc" ] || [ ! -d "$types/node" ]; then
	new_project "$tmp/ts"
	(cd "$tmp/ts" && npm install --no-audit --no-fund --loglevel=error --ignore-scripts \
		typescript@5.4.5 @types/node@20.14.10 >/dev/null) || fail "npm install typescript"
	tsc=$tmp/ts/node_modules/.bin/tsc types=$tmp/ts/node_modules/@types
fi
cat >"$tmp/tgz/tsconfig.json" <<EOF
{
  "compilerOptions": {
    "strict": true, "noEmit": true, "target": "es2022",
    "module": "node16", "moduleResolution": "node16",
    "types": ["node"], "typeRoots": ["$types"], "skipLibCheck": false
  },
  "files": ["use.ts"]
}
EOF
cat >"$tmp/tgz/use.ts" <<'EOF'
import { Lock, HoldfastError, version } from 'holdfast';
import * as plf from 'holdfast/proper-lockfile';

async function main(file: string): Promise<void> {
  const l: Lock = new Lock(file + '.lock').acquireSync();
  const fence: bigint = l.fence;
  l.release();
  const release: () => Promise<void> = await plf.lock(file);
  await release();
  try {
    plf.lockSync(file)();
  } catch (e) {
    if (e instanceof HoldfastError) console.log(e.code, e.holder?.pid);
  }
  console.log(version(), fence);
}
main(process.argv[2] ?? '/tmp/x').catch(console.error);
EOF
(cd "$tmp/tgz" && "$tsc" -p tsconfig.json) || fail "strict tsc on the installed package"
# ... and a misuse is refused (the check is not vacuous).
printf "import { Lock } from 'holdfast';\nconst n: number = new Lock('/x').fence;\n" >"$tmp/tgz/use.ts"
if (cd "$tmp/tgz" && "$tsc" -p tsconfig.json >/dev/null 2>&1); then
	fail "tsc accepted a bigint as a number: the package's types were not used"
fi

# 5. A missing compiler or missing Node headers: one message, non-zero.
miss() { # $1: env assignment, $2: the Debian package the message must name
	local p=$tmp/miss-$3
	new_project "$p"
	if (cd "$p" && env "$1" npm install --offline --no-audit --no-fund "$tgz" >"$p.log" 2>&1); then
		fail "$1: npm install succeeded"
	fi
	[ "$(grep -c 'cannot compile the native addon' "$p.log")" = 1 ] ||
		{ cat "$p.log" >&2; fail "$1: not one message"; }
	grep 'cannot compile the native addon' "$p.log" | grep -q "apt-get install $2" ||
		{ cat "$p.log" >&2; fail "$1: the message does not name $2"; }
	[ ! -e "$p/node_modules/holdfast" ] || fail "$1: a failed install left node_modules/holdfast"
}
miss CC=/nonexistent gcc cc
miss NODE_INCLUDE=/nonexistent libnode-dev node

size() { du -sh "$1" | cut -f1; }
echo "npm install <dir>:     ${t_dir} s (link; addon $(size "$tmp/repo/bindings/node/build/holdfast.node"))"
echo "npm install <tarball>: ${t_tgz} s (tarball $(size "$tgz"), node_modules/holdfast $(size "$tmp/tgz/node_modules/holdfast"), addon $(size "$addon"))"
echo "$me: ok"

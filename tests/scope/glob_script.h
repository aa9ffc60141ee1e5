/* glob_script.h - one shell script of glob specs run on both backends
 * (tests/scope/test_glob.c on the file registry, tests/etcd/test_scope.c on
 * etcd): two pods with src globs that meet conflict naming the pair and the
 * holder, disjoint ones do not, unsupported syntax is a usage error naming
 * the character, a glob child inside its parent's prefix is delegated and
 * one outside is refused naming a path outside, effective/check see the
 * child's glob, and a dead child's glob returns to its parent (at once on
 * the file registry; on etcd once the keeper revokes its lease). $1: the
 * directory to work in; $HOLDFAST_BIN the CLI. */
#ifndef GLOB_SCRIPT_H
#define GLOB_SCRIPT_H

#define GLOB_SCRIPT \
	"H=\"$HOLDFAST_BIN\"; cd \"${1:-.}\" || exit 9\n" \
	"mkdir -p g/src/parser g/lib/a g/doc\n" \
	"sleep 1000 </dev/null >/dev/null 2>&1 & a=$!\n" \
	"sleep 1000 </dev/null >/dev/null 2>&1 & b=$!\n" \
	"sleep 1000 </dev/null >/dev/null 2>&1 & d=$!\n" \
	"trap 'kill $a $b $d 2>/dev/null' EXIT\n" \
	"\"$H\" scope register TS 'g/src/**/*.ts:write' --pid $a >/dev/null || exit 10\n" \
	"\"$H\" scope register PARSER 'g/src/parser/*.ts:write' --pid $b 2>c.err; echo \"conflict=$?\"\n" \
	"cat c.err >&2\n" \
	"\"$H\" scope register CS 'g/src/**/*.c:write' --pid $b >/dev/null; echo \"disjoint=$?\"\n" \
	"\"$H\" scope register BAD 'g/src/{a,b}/*.ts:write' --pid $b 2>bad.err; echo \"usage=$?\"\n" \
	"cat bad.err >&2\n" \
	"\"$H\" scope check g/src/parser/x.ts; echo \"held=$?\"\n" \
	"\"$H\" scope check g/src/parser/x.ts --pod TS; echo \"ts=$?\"\n" \
	"\"$H\" scope check g/src/parser/x.c --pod CS; echo \"cs=$?\"\n" \
	"\"$H\" scope check g/src/parser/x.py; echo \"free=$?\"\n" \
	"\"$H\" scope register P g/lib:write:recursive --pid $a >/dev/null || exit 11\n" \
	"\"$H\" scope register K 'g/lib/**/*.h:write' --pid $d --from P >/dev/null; echo \"inside=$?\"\n" \
	"\"$H\" scope register OUT 'g/*/x.md:write' --pid $d --from P 2>out.err; echo \"outside=$?\"\n" \
	"cat out.err >&2\n" \
	"\"$H\" scope effective P\n" \
	"\"$H\" scope check g/lib/a/b.h --pod P; echo \"delegated=$?\"\n" \
	"\"$H\" scope check g/lib/a/b.h --pod K; echo \"kh=$?\"\n" \
	"\"$H\" scope check g/lib/a/b.c --pod P; echo \"pc=$?\"\n" \
	"kill -9 $d; wait $d 2>/dev/null\n" \
	"i=0; until \"$H\" scope check g/lib/a/b.h --pod P >/dev/null; do\n" \
	"  i=$((i+1)); [ $i -gt 300 ] && { echo K-stayed; break; }; sleep 0.1\n" \
	"done\n" \
	"\"$H\" scope check g/lib/a/b.h --pod P; echo \"returned=$?\"\n" \
	"kill $a $b 2>/dev/null; wait $a $b 2>/dev/null\n" \
	"exit 0\n"

/* What the script's output must hold (out: stdout, err: stderr). */
#define GLOB_SCRIPT_CHECK(out, err) do { \
	cr_assert(strstr(out, "conflict=1\n"), "%s\n%s", out, err); \
	cr_assert(strstr(err, "'g/src/parser/*.ts:write'") && \
		  strstr(err, "/g/src/**/*.ts:write of TS (pid "), "the pair and the holder: %s", err); \
	cr_assert(strstr(out, "disjoint=0\n"), "*.ts and *.c do not meet: %s\n%s", out, err); \
	cr_assert(strstr(out, "usage=64\n") && strstr(err, "'{' at byte "), "%s\n%s", out, err); \
	cr_assert(strstr(out, "held=1\n") && strstr(out, "ts=0\n") && strstr(out, "cs=0\n") && \
		  strstr(out, "free=0\n"), "%s", out); \
	cr_assert(strstr(out, "inside=0\n"), "%s\n%s", out, err); \
	cr_assert(strstr(out, "outside=1\n") && strstr(err, "/x.md is outside it"), \
		  "refused naming the part outside: %s\n%s", out, err); \
	cr_assert(strstr(out, "/g/lib/**/*.h:write (delegated to K"), "effective: %s", out); \
	cr_assert(strstr(out, "delegated=1\n") && strstr(out, "kh=0\n") && strstr(out, "pc=0\n"), \
		  "%s", out); \
	cr_assert(!strstr(out, "K-stayed") && strstr(out, "returned=0\n"), "%s", out); \
} while (0)

#endif

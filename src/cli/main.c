/*
 * main.c - `holdfast`: dispatch to the command families.
 */
#include "cli.h"
#include "holdfast.h"
#include "faults.h"

#include <stdio.h>
#include <string.h>

static const char usage[] =
	"usage: holdfast COMMAND [ARGS]\n"
	"\n"
	"Cooperating processes excluding each other through the file system.\n"
	"\n"
	"commands:\n"
	"  session take|release|renew|status|assert-held|race   one holder per work tree\n"
	"  lock acquire|release|renew|check|status PATH   short directory lock\n"
	"  list [DIR]                                     every lock under DIR, read only\n"
	"  scope register|release|list|effective|check|reap   machine-wide path scopes\n"
	"  run [--session LANE] [--lock PATH]... [--scope SPEC]... -- CMD [ARG...]\n"
	"                                                 hold locks while CMD runs\n"
	"  edit FILE -- CMD [ARG...]                      locked, atomic read-modify-write\n"
	"  selftest [DIR]                                 scripted interleavings on DIR's fs\n"
	"  flock [-n|-w SECS] [-E CODE] FILE CMD... | FD   flock(1)'s command line\n"
	"\n"
	"lock, run, edit, session, scope and list take --backend etcd://HOST:PORT[,...]\n"
	"(or HOLDFAST_BACKEND): the same locks, sessions and scopes kept in etcd.\n"
	"\n"
	"-h, --help: this; -V, --version: the version (both also after a command or\n"
	"subcommand).\n"
	"'holdfast COMMAND --help' for each. Exit codes: 0 done, 1 held by another or\n"
	"timed out, 64 usage, 65 unreadable record, 69 nothing to release, 77 refused for\n"
	"safety, 70/71/73/74 internal/OS/cannot create/I-O; run and edit pass CMD's status.\n"
	"--json on every command: exactly one JSON object on stdout, the answer or\n"
	"{\"error\",\"exit\",\"message\",\"path\",\"holder\"} (holdfast(1): JSON OUTPUT).\n";

int main(int argc, char **argv)
{
	/* The CLI obeys test rules from its environment (faults.h), so that a
	 * test can script a holdfast process; the library alone never does. A
	 * rule that names nothing known is refused, never armed silently. */
	cli_json_begin(argc, argv); /* --json: one object, whatever happens */
	char why[256];
	if (hf_fault_arm_from_env(why, sizeof why) < 0) {
		cli_err("HOLDFAST_FAULTS: %s", why);
		return cli_json_end(HF_EXIT_USAGE);
	}
	int handed = cli_backend_handover(argc, argv); /* etcd: holdfast-etcd's */
	if (handed)
		return cli_json_end(handed);
	if (argc < 2) {
		fputs(usage, stderr);
		return cli_json_end(HF_EXIT_USAGE);
	}
	const char *c = argv[1];
	if (!strcmp(c, "--help") || !strcmp(c, "-h") || !strcmp(c, "help")) {
		fputs(usage, stdout);
		return HF_EXIT_OK;
	}
	if (!strcmp(c, "--version") || !strcmp(c, "-V"))
		return cli_version();
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} cmds[] = {
		{ "session", cmd_session }, { "selftest", cmd_selftest }, { "lock", cmd_lock },
		{ "run", cmd_run },         { "edit", cmd_edit },         { "scope", cmd_scope },
		{ "list", cmd_list },
		{ "flock", cmd_flock },
	};
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (!strcmp(c, cmds[i].name))
			return cli_json_end(cmds[i].fn(argc - 1, argv + 1));
	cli_err("unknown command '%s' (see 'holdfast --help')", c);
	return cli_json_end(HF_EXIT_USAGE);
}

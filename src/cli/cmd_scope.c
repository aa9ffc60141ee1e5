/* SCAFFOLD: replaced by the command's own implementation (see the issues). */
#include "cli.h"
int cmd_scope(int argc, char **argv)
{
	cli_err("%s: not built yet", argv[0]);
	return HF_EXIT_SOFTWARE;
}
int cli_scope_run_register(const char *name, const char *const *specs, size_t nspecs, int pid,
			   char *ret_name, size_t n)
{
	cli_err("run --scope: not built yet");
	return HF_EXIT_SOFTWARE;
}
int cli_scope_run_release(const char *name)
{
	return HF_EXIT_SOFTWARE;
}

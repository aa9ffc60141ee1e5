/* SCAFFOLD: replaced by the command's own implementation (see the issues). */
#include "cli.h"
int cmd_run(int argc, char **argv)
{
	cli_err("%s: not built yet", argv[0]);
	return HF_EXIT_SOFTWARE;
}

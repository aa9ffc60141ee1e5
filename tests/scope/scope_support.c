/*
 * scope_support.c - shared set-up for the scope registry suites.
 */
#include "scope_support.h"

#include "hft.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

char *sc_dir;
char sc_reg[512];

void sc_setup(void)
{
	sc_dir = hft_tmpdir();
	snprintf(sc_reg, sizeof sc_reg, "%s/reg/scope.lock", sc_dir);
	setenv("HOLDFAST_REGISTRY", sc_reg, 1);
	unsetenv("HOLDFAST_POD");
}

void sc_teardown(void)
{
	hft_rmtree(sc_dir);
	free(sc_dir);
}

void sc_sleeper_start(struct sc_sleeper *s)
{
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[1]);
		char c;
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(p[0]);
	s->pid = pid;
	s->wr = p[1];
}

void sc_sleeper_end(struct sc_sleeper *s, int sig)
{
	if (sig)
		kill(s->pid, sig);
	close(s->wr);
	int st;
	while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR)
		;
}

static int cli_va(const char *env, char **out, char **err, va_list ap)
{
	const char *argv[64];
	int n = 0;
	argv[n++] = "holdfast";
	const char *a;
	while ((a = va_arg(ap, const char *)) && n < 63)
		argv[n++] = a;
	argv[n] = NULL;
	return hft_cli_env(out, err, env, NULL, argv);
}

int sc_cli(char **out, char **err, ...)
{
	va_list ap;
	va_start(ap, err);
	int rc = cli_va(NULL, out, err, ap);
	va_end(ap);
	return rc;
}

int sc_cli_env(const char *env, char **out, char **err, ...)
{
	va_list ap;
	va_start(ap, err);
	int rc = cli_va(env, out, err, ap);
	va_end(ap);
	return rc;
}

const char *sc_num(long long v)
{
	static char ring[16][24];
	static int at;
	char *b = ring[at++ % 16];
	snprintf(b, 24, "%lld", v);
	return b;
}

const char *sc_path(const char *rel)
{
	static char ring[16][1024];
	static int at;
	char *b = ring[at++ % 16];
	snprintf(b, 1024, "%s/%s", sc_dir, rel);
	return b;
}

json_t *sc_registry_json(void)
{
	json_error_t e;
	json_t *root = json_load_file(sc_reg, 0, &e);
	cr_assert_not_null(root, "the registry %s must parse: %s", sc_reg, e.text);
	return root;
}

json_t *sc_alloc(json_t *root, const char *name)
{
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(root, "allocations"), i, a)
		if (!strcmp(json_string_value(json_object_get(a, "name")), name))
			return a;
	return NULL;
}

/* docs/outcomes.md is the one table of the library's outcomes in every
 * language; this reads it and checks the C side against it, row by row:
 * the constant's value, hf_error_name (the name and the JSON `error`
 * column), and the CLI's exit code for it (cli_exit_for, src/cli/common.c,
 * compiled into this test). Every HF_E* outcome the library names must
 * have its row. The bindings' tests read the same table
 * (bindings/{python,node,rust}). */
#include "cli.h"
#include "hft.h"
#include "holdfast.h"

#include <criterion/criterion.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS 128
#define MAX_CELLS 8

struct row {
	char cell[MAX_CELLS][512];
	int n;
};

static struct row rows[MAX_ROWS];
static int nrows;

/* The first `quoted` token of s into out ("" when none). */
static void first_quoted(const char *s, char *out, size_t n)
{
	out[0] = '\0';
	const char *a = strchr(s, '`');
	const char *b = a ? strchr(a + 1, '`') : NULL;
	if (!b || (size_t)(b - a - 1) >= n)
		return;
	memcpy(out, a + 1, (size_t)(b - a - 1));
	out[b - a - 1] = '\0';
}

/* The first integer (with its sign) of s outside backquotes. */
static long first_int(const char *s)
{
	bool quoted = false;
	for (const char *p = s; *p; p++) {
		if (*p == '`')
			quoted = !quoted;
		else if (!quoted && (isdigit((unsigned char)*p) ||
				     (*p == '-' && isdigit((unsigned char)p[1]))))
			return strtol(p, NULL, 10);
	}
	cr_assert_fail("no number in the cell \"%s\"", s);
	return 0;
}

/* The table's rows: lines "| `name` | ..." (the header and the rule excluded). */
static void read_table(void)
{
	const char *src = getenv("HOLDFAST_SRC");
	cr_assert(src, "HOLDFAST_SRC names the source tree (meson sets it)");
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/docs/outcomes.md", src);
	char *text = hft_slurp(path);
	cr_assert(text, "%s: not readable", path);
	nrows = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (strncmp(line, "| `", 3))
			continue;
		cr_assert_lt(nrows, MAX_ROWS);
		struct row *r = &rows[nrows++];
		r->n = 0;
		char *p = line + 1;
		for (char *bar; (bar = strchr(p, '|')); p = bar + 1) {
			cr_assert_lt(r->n, MAX_CELLS, "too many cells: %s", line);
			*bar = '\0';
			snprintf(r->cell[r->n++], sizeof r->cell[0], "%s", p);
		}
		cr_assert_eq(r->n, MAX_CELLS, "a row of %d cells, not %d", r->n, MAX_CELLS);
	}
	free(text);
	cr_assert_gt(nrows, 10, "%s: no table of outcomes", path);
}

static const struct {
	const char *sym;
	int rc;
} constants[] = {
	{ "HF_EHELD", HF_EHELD }, { "HF_EUNREADABLE", HF_EUNREADABLE },
	{ "HF_ENOTHELD", HF_ENOTHELD }, { "HF_ENOTYOURS", HF_ENOTYOURS },
	{ "HF_ETIMEDOUT", HF_ETIMEDOUT }, { "HF_ECONFLICT", HF_ECONFLICT },
	{ "HF_EUNSAFE", HF_EUNSAFE }, { "HF_EBARRIER", HF_EBARRIER },
	{ "HF_ELOST", HF_ELOST }, { "HF_ECANCELED", HF_ECANCELED },
};

TestSuite(outcomes, .timeout = 30);

Test(outcomes, the_table_is_the_library_and_the_cli)
{
	read_table();
	for (int i = 0; i < nrows; i++) {
		struct row *r = &rows[i];
		char name[128], sym[128], json[128];
		first_quoted(r->cell[0], name, sizeof name);
		first_quoted(r->cell[1], sym, sizeof sym);
		first_quoted(r->cell[3], json, sizeof json);
		int rc = (int)first_int(r->cell[1]);
		if (!strncmp(sym, "HF_E", 4)) {
			bool found = false;
			for (size_t k = 0; k < sizeof constants / sizeof constants[0]; k++)
				if (!strcmp(constants[k].sym, sym)) {
					cr_expect_eq(constants[k].rc, rc, "%s is %d in holdfast.h, %d in the table",
						     sym, constants[k].rc, rc);
					found = true;
				}
			cr_expect(found, "%s: no such constant in holdfast.h", sym);
		} else {
			cr_expect(sym[0] == '-' && strerrorname_np(-rc) && !strcmp(strerrorname_np(-rc), sym + 1),
				  "row %s: %s is not errno %d negated", name, sym, -rc);
		}
		cr_expect_str_eq(hf_error_name(rc), name, "hf_error_name(%d) is %s, the table says %s", rc,
				 hf_error_name(rc), name);
		cr_expect_str_eq(json, hf_error_name(rc), "the JSON error of %d: the table says %s", rc, json);
		long want = first_int(r->cell[2]);
		cr_expect_eq(cli_exit_for(rc), want, "the CLI exits %d for %s, the table says %ld",
			     cli_exit_for(rc), name, want);
	}
}

Test(outcomes, every_outcome_has_its_row)
{
	read_table();
	/* the outcomes are the codes below -4096 that hf_error_name names */
	int n = 0;
	for (int rc = -4097; rc > -4200; rc--) {
		if (!strcmp(hf_error_name(rc), "unknown"))
			continue;
		n++;
		int seen = 0;
		for (int i = 0; i < nrows; i++) {
			char name[128];
			first_quoted(rows[i].cell[0], name, sizeof name);
			seen += !strcmp(name, hf_error_name(rc)) && first_int(rows[i].cell[1]) == rc;
		}
		cr_expect_eq(seen, 1, "outcome %d (%s) has %d rows in docs/outcomes.md", rc,
			     hf_error_name(rc), seen);
	}
	cr_assert_eq(n, (int)(sizeof constants / sizeof constants[0]),
		     "the library names %d outcomes, this test knows %zu", n,
		     sizeof constants / sizeof constants[0]);
}

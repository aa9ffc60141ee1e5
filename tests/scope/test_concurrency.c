/* 200 processes register and release distinct scopes at once: every
 * registration is recorded (all 200 are in the table together), none is
 * lost, generations are distinct, and the table is empty at the end. */
#include "hft.h"
#include "scope_support.h"
#include "registry_fs.h"

#include "holdfast.h"
#include "sys.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NPROC 200

TestSuite(concurrency, .init = sc_setup, .fini = sc_teardown, .timeout = 120);

static int worker(void *arg)
{
	int i = (int)(long)arg;
	char name[32], spec[1024];
	snprintf(name, sizeof name, "w%03d", i);
	snprintf(spec, sizeof spec, "%s:write:recursive", sc_path(name));
	const char *specs[] = { spec };
	struct hf_scopereg_request req = { .name = name, .specs = specs, .nspecs = 1 };
	struct hf_scopereg_holder h;
	uint64_t gen;
	int fd;
	int rc = hf_scopereg_register(&req, &gen, &fd, &h);
	if (rc < 0) {
		fprintf(stderr, "%s: register: %s (%s)\n", name, hf_strerror(rc), h.reason);
		return 10;
	}
	hf_sys_point(HF_PT_TEST_REGISTERED); /* the test holds everyone here */
	rc = hf_scopereg_release(NULL, name, gen, &h);
	close(fd);
	if (rc < 0)
		fprintf(stderr, "%s: release: %s (%s)\n", name, hf_strerror(rc), h.reason);
	return rc < 0 ? 11 : 0;
}

Test(concurrency, two_hundred_at_once)
{
	static struct hft_child c[NPROC];
	for (int i = 0; i < NPROC; i++)
		hft_spawn_fn(&c[i], "pause:test.registered", worker, (void *)(long)i);
	for (int i = 0; i < NPROC; i++)
		hft_expect(&c[i], "test.registered");
	/* all registered, none released yet */
	struct hf_scopereg_table *t;
	cr_assert_eq(hf_scopereg_read(NULL, &t, NULL), 0);
	cr_assert_eq(hf_scopereg_count(t), NPROC, "every registration recorded");
	static bool seen[NPROC + 1];
	for (size_t i = 0; i < NPROC; i++) {
		struct hf_scopereg_alloc a;
		hf_scopereg_get(t, i, &a);
		cr_assert_eq(a.live, HF_ALIVE);
		cr_assert(a.generation >= 1 && a.generation <= NPROC);
		cr_assert(!seen[a.generation], "generation %llu granted twice",
			  (unsigned long long)a.generation);
		seen[a.generation] = true;
	}
	cr_assert_eq(hf_scopereg_generation(t), NPROC);
	hf_scopereg_free(t);
	for (int i = 0; i < NPROC; i++)
		hft_go(&c[i]);
	for (int i = 0; i < NPROC; i++)
		cr_assert_eq(hft_wait(&c[i]), 0, "worker %d", i);
	cr_assert_eq(hf_scopereg_read(NULL, &t, NULL), 0);
	cr_assert_eq(hf_scopereg_count(t), 0, "the table is empty at the end");
	cr_assert_eq(hf_scopereg_generation(t), 2 * NPROC, "one step per change");
	hf_scopereg_free(t);
}

/*
 * fuzz.h - what every parser target shares (fuzz/README.md).
 *
 * A target is LLVMFuzzerTestOneInput over one parser: it must never crash
 * on any input, and where it is cheap it checks a property of what the
 * parser accepted (parse -> format -> parse is the identity, a value lies
 * in its range, canonical forms are fixed points). A property that fails
 * aborts, like a crash: libFuzzer and the replay driver both report it.
 */
#ifndef HF_FUZZ_H
#define HF_FUZZ_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property of an accepted input: abort with what failed. */
#define FUZZ_CHECK(cond)                                                               \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, \
				#cond);                                                \
			abort();                                                       \
		}                                                                      \
	} while (0)

/* The input as a C string (cut at its first NUL), malloc'd; free it. */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

#endif

/*
 * replay.c - feed files to a target's LLVMFuzzerTestOneInput without
 * libFuzzer: `make test` replays every corpus file through every target
 * (suite fuzz-replay), under ASan+UBSan in the sanitizer build.
 *
 * usage: TARGET-replay FILE|DIR...   (a directory: every regular file in
 * it, in name order). Each input is copied into a buffer of exactly its
 * size, so a read past the end is a sanitizer error. Exit 0 when every
 * input ran (a property failure aborts), 1 when a file cannot be read or
 * no input was found.
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	size_t cap = 4096, len = 0;
	uint8_t *buf = malloc(cap);
	for (size_t r; buf && (r = fread(buf + len, 1, cap - len, f)) > 0;) {
		len += r;
		if (len == cap)
			buf = realloc(buf, cap *= 2);
	}
	fclose(f);
	if (!buf)
		abort();
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact)
		abort();
	memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
	int files = 0, bad = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			bad++;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			bad += run_file(argv[i]) < 0;
			files++;
			continue;
		}
		struct dirent **ents;
		int n = scandir(argv[i], &ents, NULL, by_name);
		if (n < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			bad++;
			continue;
		}
		for (int k = 0; k < n; k++) {
			char path[4096];
			snprintf(path, sizeof path, "%s/%s", argv[i], ents[k]->d_name);
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
				bad += run_file(path) < 0;
				files++;
			}
			free(ents[k]);
		}
		free(ents);
	}
	printf("replayed %d inputs\n", files);
	return bad || files == 0 ? 1 : 0;
}

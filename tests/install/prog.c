/* A program as a user of libholdfast writes it: only <holdfast.h>, built
 * with `pkg-config --cflags --libs holdfast` against the installed tree.
 * It holds a lock the CLI must see and respect, then respects one the CLI
 * holds for it. Exit 0 when every check holds; otherwise a message names
 * the check. Usage: prog HOLDFAST_CLI LOCK_PATH (HOLDFAST_CLI "-": the
 * library alone). */
#include <holdfast.h>

#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *cli;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "prog: check failed: " __VA_ARGS__);   \
			fputc('\n', stderr);                                   \
			exit(1);                                               \
		}                                                              \
	} while (0)

/* Run the CLI with args; its exit code, its stdout in out (n bytes). */
static int run_cli(char *out, size_t n, const char *const *args)
{
	int p[2];
	CHECK(pipe(p) == 0, "pipe");
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addclose(&fa, p[0]);
	pid_t pid;
	CHECK(posix_spawn(&pid, cli, &fa, NULL, (char *const *)args, environ) == 0, "spawn %s",
	      cli);
	close(p[1]);
	size_t len = 0;
	ssize_t r;
	while (len + 1 < n && (r = read(p[0], out + len, n - 1 - len)) > 0)
		len += (size_t)r;
	out[len] = '\0';
	close(p[0]);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	posix_spawn_file_actions_destroy(&fa);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	CHECK(argc == 3, "usage: prog HOLDFAST_CLI LOCK_PATH");
	cli = argv[1];
	const char *path = argv[2];
	CHECK(!strcmp(hf_version(), HF_VERSION_STRING), "hf_version %s, header %s", hf_version(),
	      HF_VERSION_STRING);

	if (!strcmp(cli, "-")) {
		/* the library alone (run with HOLDFAST_FAULTS set: it must obey
		 * none of it) */
		hf_lock *l;
		CHECK(hf_lock_new(path, &l) == 0, "hf_lock_new");
		int rc = hf_lock_acquire(l);
		CHECK(rc == 0, "acquire: %s", hf_strerror(rc));
		CHECK(hf_lock_check(l) == 0, "check");
		CHECK(hf_lock_release(l) == 0, "release");
		hf_rec *st;
		CHECK(hf_lock_status(path, &st) == 0, "status");
		CHECK(!strcmp(hf_rec_str(st, "state"), "free"), "free: %s", hf_rec_json(st));
		hf_rec_free(st);
		hf_lock_free(l);
		puts("ok");
		return 0;
	}

	/* 1. The library holds; the CLI sees the holder and is refused. */
	hf_lock *l;
	CHECK(hf_lock_new(path, &l) == 0, "hf_lock_new");
	int rc = hf_lock_acquire(l);
	CHECK(rc == 0, "acquire: %s (%s)", hf_strerror(rc), hf_error_name(rc));
	char out[4096], pidbuf[32];
	snprintf(pidbuf, sizeof pidbuf, "%d", (int)getpid());
	rc = run_cli(out, sizeof out, (const char *const[]){ cli, "lock", "status", path, "--json", NULL });
	CHECK(rc == 0, "lock status exit %d", rc);
	char want[64];
	snprintf(want, sizeof want, "\"pid\": %d", (int)getpid());
	char want2[64];
	snprintf(want2, sizeof want2, "\"pid\":%d", (int)getpid());
	CHECK(strstr(out, want) || strstr(out, want2), "the CLI names this process as holder: %s",
	      out);
	CHECK(strstr(out, hf_lock_token(l)), "the CLI shows this handle's token: %s", out);
	rc = run_cli(out, sizeof out, (const char *const[]){ cli, "lock", "acquire", "-n", path, "--pid", pidbuf, NULL });
	CHECK(rc == 1, "the CLI's acquire is refused while the library holds (exit %d)", rc);
	uint64_t fence1 = hf_lock_fence(l);
	CHECK(hf_lock_release(l) == 0, "release");

	/* 2. The CLI holds for this process; the library is refused, names the
	 * holder, and gets it after the CLI's release. */
	rc = run_cli(out, sizeof out, (const char *const[]){ cli, "lock", "acquire", "-n", path, "--pid", pidbuf, NULL });
	CHECK(rc == 0, "the CLI acquires once the library released (exit %d)", rc);
	char token[128];
	uint64_t fence2 = 0;
	CHECK(sscanf(out, "%127s %" SCNu64, token, &fence2) == 2, "TOKEN FENCE: %s", out);
	CHECK(fence2 > fence1, "fences grow across the two: %" PRIu64 " then %" PRIu64, fence1,
	      fence2);
	rc = hf_lock_acquire(l);
	CHECK(rc == HF_EHELD, "the library is refused while the CLI holds: %s", hf_strerror(rc));
	CHECK(!strcmp(hf_error_name(rc), "held"), "hf_error_name: %s", hf_error_name(rc));
	const char *tok = hf_rec_str(hf_lock_holder(l), "token");
	CHECK(tok && !strcmp(tok, token), "the holder record names the CLI's token");
	int64_t holder_pid = 0;
	CHECK(hf_rec_int(hf_lock_holder(l), "pid", &holder_pid) == 0 && holder_pid == getpid(),
	      "the holder's pid");
	rc = run_cli(out, sizeof out, (const char *const[]){ cli, "lock", "release", path, "--token", token, NULL });
	CHECK(rc == 0, "the CLI releases (exit %d)", rc);
	rc = hf_lock_acquire(l);
	CHECK(rc == 0, "the library acquires after the CLI's release: %s", hf_strerror(rc));
	CHECK(hf_lock_fence(l) > fence2, "its fence is greater again");
	hf_lock_free(l); /* releases */
	rc = run_cli(out, sizeof out, (const char *const[]){ cli, "lock", "status", path, NULL });
	CHECK(rc == 0 && !strncmp(out, "free", 4), "free after hf_lock_free: %s", out);
	puts("ok");
	return 0;
}

/*
 * waitline.c - a wait says what it waits for (run.h): on a terminal one
 * status line, updated in place, after the first second of waiting; with
 * -v (for scripts) a line when the wait starts and "getting lock took
 * 1.234 s" at the end; nothing otherwise.
 *
 * The wait itself stays the library's, one call for the whole deadline
 * (it wakes on the release, with its own backoff). The line is refreshed by
 * a second thread, the ticker, which sleeps on a pipe and wakes once a
 * second to read the holder (the caller's callback: hf_lock_status and the
 * like) and rewrite the line. Cutting the library's wait into one-second
 * slices instead would restart its backoff every second (1, 4, 9 ... ms:
 * some ten extra wake-ups per second for an idle waiter); the ticker adds
 * exactly one.
 *
 * Steps
 * -----
 *   1. cli_waitline_wanted: only when stderr is a terminal or with -v does
 *      the caller first try once (wait 0); a lock taken at once, or a
 *      refusal that is not a wait, goes on as without this file.
 *   2. cli_waitline_begin, after a try that found the lock held: -v prints
 *      "waiting for WHAT: held by ..." (the refusal's holder); on a
 *      terminal the ticker starts, its first line one second later.
 *   3. The caller waits in the library for the time left of its deadline.
 *   4. cli_waitline_end: the ticker stops and is joined; the line, if one
 *      was shown, is cleared (\r, erase to the end of the line) before any
 *      other message is written.
 *
 * Invariants
 * ----------
 *   (WL1) Nothing reaches a stderr that is not a terminal unless -v: the
 *         ticker runs only on a terminal.
 *   (WL2) The status line never outlives the wait: cli_waitline_end joins
 *         the ticker before it returns and erases what it wrote; every
 *         path out of a wait calls it before printing.
 *   (WL3) The line is one terminal row: shown through cli_shown (no
 *         control character from a path or a record reaches the terminal)
 *         and cut to the terminal's width, so \r and erase-line clear all
 *         of it.
 *   (WL4) An idle waiter wakes at most once a second more because of the
 *         line: the ticker's only timer.
 *
 * Hazards
 * -------
 *   - The ticker calls the library (the callback) while the main thread
 *     waits in it. The library's process-wide caches (host name, boot id,
 *     namespaces) are filled by the main thread's first try (step 1)
 *     before the ticker starts, so the ticker only reads them.
 *   - A terminal narrower than the line shows it cut; a terminal resized
 *     while waiting gets the new width at the next tick.
 */
#include "cli.h"
#include "run.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

bool cli_verbose;

#define TICK_NS 1000000000LL

bool cli_waitline_wanted(void)
{
	static int tty = -1; /* one question per process */
	if (tty < 0)
		tty = isatty(2) ? 1 : 0;
	return tty || cli_verbose;
}

void cli_waitline_init(struct cli_waitline *w, const char *what, cli_holder_fn holder,
		       const void *ctx)
{
	memset(w, 0, sizeof *w);
	w->what = what;
	w->holder = holder;
	w->ctx = ctx;
	w->stop[0] = w->stop[1] = -1;
}

/* The terminal's width in columns (80 when it does not say). */
static int columns(void)
{
	struct winsize ws;
	if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

/* The line is on the terminal (for erase_and_end, below). */
static volatile sig_atomic_t line_up;

/* One tick: the line, in place (WL3). */
static void draw(struct cli_waitline *w)
{
	char words[sizeof w->words] = "";
	if (w->holder)
		w->holder(w->ctx, words, sizeof words);
	if (words[0]) /* free for the moment: the last holder seen stays */
		snprintf(w->words, sizeof w->words, "%s", words);
	char waited[32], body[1024], shown[4096], line[4200];
	cli_format_age((hf_sys_mono_ns() - w->begin_ns) / 1000000, waited, sizeof waited);
	if (w->words[0])
		snprintf(body, sizeof body, "waiting for %s: held by %s; waited %s", w->what, w->words,
			 waited);
	else
		snprintf(body, sizeof body, "waiting for %s; waited %s", w->what, waited);
	cli_shown(body, shown, sizeof shown);
	/* cut to the width (one column less: no wrap at the last column),
	 * counting characters, never splitting one */
	int room = columns() - 1 - (int)strlen("holdfast: ");
	size_t cut = 0;
	for (int cols = 0; shown[cut]; cut++) {
		if (((unsigned char)shown[cut] & 0xc0) != 0x80 && ++cols > room)
			break;
	}
	const char *more = "";
	if (shown[cut]) {
		/* too wide: whole clauses only, never a number cut short (a fence
		 * of 16 digits cut to 1 would be a wrong fence), and say so */
		size_t c = 0;
		for (int cols = 0; shown[c]; c++)
			if (((unsigned char)shown[c] & 0xc0) != 0x80 && ++cols > room - 2)
				break;
		while (c > 0 && shown[c] != ',' && shown[c] != ';')
			c--;
		cut = c;
		more = " \u2026";
	}
	int n = snprintf(line, sizeof line, "\rholdfast: %.*s%s\033[K", (int)cut, shown, more);
	line_up = 1;
	if (n > 0 && hf_sys_write(2, line, (size_t)n) == n)
		w->shown = true;
}

/* WL2 when a signal ends the process while the line is up (lock acquire
 * has no signal loop of its own): the handler erases it, then the signal
 * does what it would have done (SA_RESETHAND: the default, at once). */
static const int ending[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
static struct sigaction ending_old[4];
static bool ending_set[4];

static void erase_and_end(int sig)
{
	if (line_up)
		(void)!write(2, "\r\033[K", 4); /* async-signal-safe */
	raise(sig);
}

static void ending_catch(void)
{
	for (size_t i = 0; i < 4; i++) {
		struct sigaction sa = { .sa_handler = erase_and_end,
					.sa_flags = SA_RESETHAND | SA_NODEFER };
		sigemptyset(&sa.sa_mask);
		ending_set[i] = hf_sys_sigaction(ending[i], NULL, &ending_old[i]) == 0 &&
				ending_old[i].sa_handler == SIG_DFL &&
				hf_sys_sigaction(ending[i], &sa, NULL) == 0;
	}
}

static void ending_restore(void)
{
	for (size_t i = 0; i < 4; i++)
		if (ending_set[i])
			hf_sys_sigaction(ending[i], &ending_old[i], NULL);
	memset(ending_set, 0, sizeof ending_set);
	line_up = 0;
}

static void *ticker(void *arg)
{
	struct cli_waitline *w = arg;
	int64_t next = w->begin_ns + TICK_NS; /* the first line after one second */
	for (;;) {
		int64_t left = next - hf_sys_mono_ns();
		if (left > 0) {
			struct pollfd p = { .fd = w->stop[0], .events = POLLIN };
			int rc = hf_sys_poll(&p, 1, (int)((left + 999999) / 1000000));
			if (rc != 0)
				break; /* stopped (or the pipe failed: stop too) */
			continue;
		}
		draw(w);
		next += TICK_NS; /* WL4 */
		int64_t now = hf_sys_mono_ns();
		if (next <= now)
			next = now + TICK_NS; /* a late tick: no burst to catch up */
	}
	return NULL;
}

void cli_waitline_begin(struct cli_waitline *w, const char *words)
{
	if (w->begun)
		return;
	w->begun = true;
	w->begin_ns = hf_sys_mono_ns();
	snprintf(w->words, sizeof w->words, "%s", words ? words : "");
	if (cli_verbose) {
		if (w->words[0])
			cli_err("waiting for %s: held by %s", w->what, w->words);
		else
			cli_err("waiting for %s", w->what);
	}
	if (!isatty(2) || hf_sys_pipe2(w->stop, O_CLOEXEC) < 0)
		return; /* WL1 */
	/* the ticker takes no signal: they stay the main thread's (signalfd) */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	w->ticking = pthread_create(&w->thread, NULL, ticker, w) == 0;
	if (w->ticking)
		ending_catch();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!w->ticking) {
		hf_sys_close(w->stop[0]);
		hf_sys_close(w->stop[1]);
		w->stop[0] = w->stop[1] = -1;
	}
}

void cli_waitline_end(struct cli_waitline *w)
{
	if (w->ticking) {
		char c = 0;
		hf_sys_write(w->stop[1], &c, 1);
		pthread_join(w->thread, NULL); /* WL2 */
		w->ticking = false;
		ending_restore();
	}
	if (w->stop[0] >= 0) {
		hf_sys_close(w->stop[0]);
		hf_sys_close(w->stop[1]);
		w->stop[0] = w->stop[1] = -1;
	}
	if (w->shown) {
		hf_sys_write(2, "\r\033[K", 4); /* WL2: erased */
		w->shown = false;
	}
}

void cli_wait_took(int64_t start_ns)
{
	if (!cli_verbose)
		return;
	int64_t ns = hf_sys_mono_ns() - start_ns;
	cli_err("getting lock took %lld.%03lld s", (long long)(ns / 1000000000),
		(long long)(ns / 1000000 % 1000));
}

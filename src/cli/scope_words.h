/*
 * scope_words.h - what `holdfast scope` (cmd_scope.c) shares with
 * `run --scope`'s registration (run_scope.c): a handle made from a name and
 * specs, and the words for a holder and a refusal. Defined in cmd_scope.c.
 */
#ifndef HF_CLI_SCOPE_WORDS_H
#define HF_CLI_SCOPE_WORDS_H

#include "holdfast.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A field of a record for a message: "" when absent. */
static inline const char *cli_scope_field(const hf_rec *r, const char *field)
{
	const char *v = hf_rec_str(r, field);
	return v ? v : "";
}

/* An integer field of a record, dflt when absent. */
static inline int64_t cli_scope_field_int(const hf_rec *r, const char *field, int64_t dflt)
{
	int64_t v;
	return hf_rec_int(r, field, &v) == 0 ? v : dflt;
}

/* --backend (or HOLDFAST_BACKEND) names the registry from now on. */
void cli_scope_use_backend(void);
/* SPEC's path (PATH:MODE[:recursive] without its suffixes) into buf (n). */
void cli_scope_spec_path(const char *spec, char *buf, size_t n);
/* "NAME (pid P, host H, generation G, registered AGE ago)" of a pod's
 * record h into buf (n). */
void cli_scope_holder_words(const hf_rec *h, char *buf, size_t n);
/* The message for a failed VERB of name (spec: the caller's spec it is
 * about, NULL none; h the holder or NULL): printed, its exit code. */
int cli_scope_report_words(const char *verb, const char *name, const char *spec, int rc,
			   const hf_rec *h);
/* The same, and the failure recorded for --json. */
int cli_scope_report(const char *verb, const char *name, const char *spec, int rc,
		     const hf_rec *h);
/* The spec of specs (n) that holder record h is about, or NULL. */
const char *cli_scope_spec_of(const char *const *specs, size_t n, const hf_rec *h);
/* The refusal a wait that ended (timed out, canceled) last met: rc else. */
int cli_scope_refusal_of(int rc, const hf_rec *h);
/* A handle for name with specs (n) and the options common to register:
 * 0 and *ret, or the exit code with the message printed. */
int cli_scope_make(const char *verb, const char *name, const char *const *specs, size_t n,
		   hf_scope **ret);
/* Read the registry of path (RG12; or the backend's) for VERB of name:
 * 0 and *r, or the exit code with the message printed. */
int cli_scope_read_at(const char *path, hf_registry **r, const char *verb, const char *name);
/* The registry read last, by name (its file, or the etcd's endpoints). */
const char *cli_scope_reg_name(char *buf, size_t n);
/* `scope check --staged` (scope_staged.c): the exit code. */
int cli_scope_check_staged(const char *pod, uint64_t gen, bool json);

#endif

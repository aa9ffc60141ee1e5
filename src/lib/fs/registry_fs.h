/*
 * registry_fs.h - the scope registry on the file system: the operations the
 * public handles (handle_scope.c, handle_registry.c) and the tests call
 * (registry.c: the change protocol), where a path's registry is
 * (registry_where.c) and the registry's files (registry_file.c). The parts
 * both backends share are in registry.h. Not part of the public API; the
 * protocol, its invariants (RG) and hazards are in registry.c's header.
 */
#ifndef HF_REGISTRY_FS_H
#define HF_REGISTRY_FS_H

#include "registry.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HF_SCOPE_LIVE_INFIX ".live-"      /* <registry>.live-<token>          */

/* --- registry.c: the operations, under the public handles ---------------- */

/* Register req->name for req->pid with every spec, or nothing (all or
 * nothing); delegated from req->from when set. 0, the generation granted,
 * and in *ret_live_fd a descriptor (close-on-exec) of the allocation's
 * liveness file holding flock(LOCK_SH): THE CALLER MUST KEEP IT OPEN AS LONG
 * AS THE OWNER (req->pid) LIVES - in that process, a child it forks, or a
 * keeper - and close it after hf_scopereg_release; a judge in another pid
 * namespace takes the lock being free as the owner's death and reaps the
 * allocation. Clear FD_CLOEXEC to pass it to an exec'ed owner. `holdfast run
 * --scope` passes it into CMD and keeps its own copy until CMD has ended;
 * `holdfast scope register` leaves it to a keeper process.
 * ret_live_fd NULL: no liveness file - then no judge outside the owner's
 * pid namespace can ever prove it dead. */
int hf_scopereg_register(const struct hf_scopereg_request *req, uint64_t *ret_generation,
			 int *ret_live_fd, struct hf_scopereg_holder *reterr_holder);
/* Remove name's allocation (generation 0: whatever its generation; else
 * HF_ENOTYOURS when the name now belongs to another registration). Its scope
 * returns to its parent; its live children are re-parented to it. Its
 * liveness file is removed after the table no longer names it. */
int hf_scopereg_release(const char *registry, const char *name, uint64_t generation,
			struct hf_scopereg_holder *reterr);
/* RG15: renew leased pod name's lease (generation 0: any), lease_ms from
 * now (0: its own length). 0 (err: the pod, its new "lease_until");
 * HF_ENOTHELD (no such pod); HF_ELOST (its lease had expired: reaped now,
 * never brought back); HF_ENOTYOURS (another generation); -EINVAL (not
 * leased: held by its pid). */
int hf_scopereg_renew(const char *registry, const char *name, uint64_t generation,
		      int64_t lease_ms, struct hf_scopereg_holder *err);
/* Read the registry without changing it (a missing registry is empty). */
int hf_scopereg_read(const char *registry, struct hf_scopereg_table **ret,
		     struct hf_scopereg_holder *reterr);
/* Reap every pod proven dead; *ret (may be NULL) holds the reaped ones and
 * the new generation. The number reaped. */
int hf_scopereg_reap(const char *registry, struct hf_scopereg_table **ret,
		     struct hf_scopereg_holder *reterr);

/* --- registry_where.c: where a registry is --------------------------------- */

/* The registry of path (RG12): $HOLDFAST_REGISTRY; else
 * <common>/holdfast/scope.lock, common the git common directory of the work
 * tree enclosing path; else <mount>/.holdfast/scope.lock, mount the root of
 * the mount holding path when it shows its file system's root, is not / and
 * is not writable by everyone. 0; HF_EUNSAFE with why (whyn bytes; may be
 * NULL) when there is no default; -errno (path cannot be resolved). Never
 * reads XDG_RUNTIME_DIR, HOME or /tmp: two mount namespaces that share a
 * tree find one registry. */
int hf_scopereg_path_for(const char *path, char *buf, size_t n, char *why, size_t whyn);
/* The current directory's (hf_scopereg_path_for(".")). */
int hf_scopereg_path(char *buf, size_t n);

/* --- registry_file.c: the files ------------------------------------------ */

/* Entries a change removed: their live files go once the table written no
 * longer names them (RG9); the judges' probes are closed then. */
struct hf_reg_gone {
	const char *token;
	int fd;
};

/* An opened registry: its directory, and its lock when locked. */
struct hf_regfile {
	int dirfd;
	int lockfd;                  /* holding LOCK_EX; -1: not locked          */
	int64_t lock_wait_ms;        /* 0: the default bound                     */
	int cancel_fd;               /* readable: stop waiting for the lock; -1  */
	char base[NAME_MAX + 1];     /* the table's name                         */
	char lockname[NAME_MAX + 1]; /* <base>.flock                             */
	char dir[PATH_MAX];
	struct hf_reg_gone *gone;
	size_t ngone, capgone;
};

/* Write the reason into err (may be NULL); returns rc. */
int hf_regfile_say(struct hf_scopereg_holder *err, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Steps 1 (and 2 when lock) of registry.c: 0, or -ENOENT when !create and
 * there is no directory yet. */
int hf_regfile_open(const char *registry, bool create, bool lock, struct hf_regfile *r,
		    struct hf_scopereg_holder *err);
void hf_regfile_close(struct hf_regfile *r);
/* Step 3: read and parse the table (an empty one when there is no file
 * yet); when locked, sweep what crashes left. */
int hf_regfile_load(struct hf_regfile *r, bool locked, struct hf_scopereg_table *t,
		    struct hf_scopereg_holder *err);
/* Step 6: write t (RG2, RG10). */
int hf_regfile_store(struct hf_regfile *r, const struct hf_scopereg_table *t,
		     struct hf_scopereg_holder *err);
/* After step 6: remove the live files of the entries the stored table no
 * longer names (when stored), then close the judges' probes (RG9). */
void hf_regfile_finish(struct hf_regfile *r, const struct hf_scopereg_table *t, bool stored);
/* Remember a removed entry's live file (token may be NULL) and probe (fd,
 * -1: none; owned by r from now on). */
void hf_regfile_gone(struct hf_regfile *r, const char *token, int fd);
/* "<base>.live-<token>" into buf (NAME_MAX + 1 bytes). */
void hf_regfile_live_name(const char *base, const char *token, char *buf);
/* Open an existing live file for a probe (RG11): the fd, or <0. */
int hf_regfile_live_open(int dirfd, const char *name);
/* Step 5 of a registration: a new live file holding LOCK_SH; the fd, and
 * its token in token. */
int hf_regfile_live_create(struct hf_regfile *r, char token[HF_REG_TOKEN_HEX + 1]);

#endif

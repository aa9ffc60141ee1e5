/*
 * fslist.h - the file system's listing (fslist.c): every directory lock,
 * session lock and holdfast flock lock under a directory, as hf_etcd_list
 * lists etcd's. Not part of the public API (hf_lock_list serves it for the
 * file backend: fs_backend.c); the walk's rules (FL1-FL4) are in fslist.c.
 */
#ifndef HF_FSLIST_H
#define HF_FSLIST_H

#include <jansson.h>
#include <stdbool.h>

#include "holdfast.h"

#define HF_FS_LIST_DEPTH_DEFAULT HF_LIST_DEPTH_DEFAULT
#define HF_FS_LIST_DEPTH_MAX HF_LIST_DEPTH_MAX

/* The locks and sessions under dir (opened following its own symbolic
 * link, if it is one; nothing below it is followed), at most depth levels
 * below it (0..HF_FS_LIST_DEPTH_MAX). 0 and *ret: a JSON array, each item
 * the record hf_lock_status / hf_session_status gives plus "kind" ("lock"
 * or "session"), or a flock lock's item (kind "flock", FL4: `holdfast
 * list`'s), in walk order (names sorted within each directory), paths dir
 * + "/" + ...; *ret_errors: a JSON array of
 * {"path", "error" (hf_error_name), "message" (hf_strerror)}, one per file
 * that could not be read (FL3); *ret_truncated (may be NULL): true when a
 * directory deeper than depth was not entered. The caller decrefs both.
 * Failures (nothing returned): -EINVAL (depth out of range, NULL
 * arguments), -ENOMEM, dir's own -errno (-ENOENT, -EACCES, -ENOTDIR...). */
int hf_fs_list(const char *dir, int depth, json_t **ret, json_t **ret_errors,
	       bool *ret_truncated);

struct hf_lock_info;
typedef struct hf_rec hf_rec;
/* The directory lock at path now (*now: an exclusive holder, else its
 * first live shared or slot holder) and *all, the fields its record adds:
 * {"mode", "slots", "holders": [every holder's record]} (fs_backend.c
 * FB4). 0, or hf_dirlock_status's -errno. */
int hf_fs_lock_status(const char *path, struct hf_lock_info *now, hf_rec **all);

#endif

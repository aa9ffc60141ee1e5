/*
 * handle.h - what the library's own files need from the public handles
 * (handle_lock.c). Not part of the public API.
 */
#ifndef HF_HANDLE_H
#define HF_HANDLE_H

#include "holdfast.h"

struct hf_dirlock_info;

/* The acquisition l holds (acquired, not adopted), or NULL. */
const struct hf_dirlock_info *hf_lock_held(const hf_lock *l);
/* l's lock directory path. */
const char *hf_lock_path(const hf_lock *l);

#endif

/*
 * holds.h - which acquisitions of a lock this process holds, and for which
 * thread (holds.c): what lets a wait refuse a lock the waiting thread holds
 * itself (HL5) on any backend. Not part of the public API.
 */
#ifndef HF_HOLDS_H
#define HF_HOLDS_H

#include "lock.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* List token as held by this process for thread tid (0: the caller). */
void hf_holds_add(const char *token, pid_t tid);
/* Unlist token. */
void hf_holds_drop(const char *token);
/* HL5: does a handle of this process hold token for the calling thread? */
bool hf_lock_held_by_caller(const char *token);
/* HL5: would a wait of wait_ms (<0 forever) for holder h never end - h held
 * for the calling thread, and not leaked (max(max-hold, stale_ms) old)
 * before a bounded wait's end? */
bool hf_lock_self_wait(const struct hf_lock_info *h, int64_t wait_ms, int64_t stale_ms);

#endif

/*
 * internal.h - what the protocols of src/lib share: the floor (src/base)
 * and owner records. Not part of the public API.
 */
#ifndef HF_INTERNAL_H
#define HF_INTERNAL_H

#include "holdfast.h"
#include "file.h"
#include "proc.h"
#include "sys.h"
#include "text.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- owner.c ------------------------------------------------------------- */

/* The JSON object of an owner record, owned by the caller (json_decref).
 * Fields: token, pid, pid_start, boot_id, host, and time_key as ISO-8601. */
struct json_t;
struct json_t *hf_owner_to_json(const struct hf_owner *o, const char *time_key);
/* Fill *ret from a JSON object; missing optional fields stay zero. -EINVAL
 * when token or pid are missing or of the wrong type. */
int hf_owner_from_json(const struct json_t *obj, const char *time_key, struct hf_owner *ret);

#endif

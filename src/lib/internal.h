/*
 * internal.h - what the protocols of src/lib share: the floor (src/base)
 * and owner records. Not part of the public API.
 */
#ifndef HF_INTERNAL_H
#define HF_INTERNAL_H

#include "holdfast.h"
#include "owner.h"
#include "dirlock.h"
#include "file.h"
#include "proc.h"
#include "sys.h"
#include "text.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#endif

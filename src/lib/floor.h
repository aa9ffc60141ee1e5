/*
 * floor.h - what every protocol of src/lib stands on, whichever backend it
 * is of: the floor (src/base: the system-call seam, text, files, /proc) and
 * owner records (owner.h). No backend's header: etcd's protocols
 * (src/lib/etcd) include this, never internal.h, which adds the file
 * system's (tests/term/layout.sh checks). Not part of the public API.
 */
#ifndef HF_FLOOR_H
#define HF_FLOOR_H

#include "holdfast.h"
#include "owner.h"
#include "file.h"
#include "proc.h"
#include "sys.h"
#include "text.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#endif

/*
 * internal.h - what the file system's protocols (src/lib/fs) share: the
 * floor (floor.h: src/base and owner records) and the room's headers
 * (dirlock.h, session_file.h, registry_fs.h). Nothing outside src/lib/fs
 * includes it but the tests (tests/term/layout.sh). Not part of the public
 * API.
 */
#ifndef HF_INTERNAL_H
#define HF_INTERNAL_H

#include "floor.h"
#include "dirlock.h"
#include "session_file.h"
#include "registry_fs.h"

#endif

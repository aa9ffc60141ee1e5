/*
 * internal.h - the floor (floor.h: src/base and owner records) and the file
 * system's protocols' headers (fs/dirlock.h, fs/session_file.h): what the
 * file system's protocols and the handles include. etcd's protocols
 * include floor.h instead: no header of src/lib/fs (tests/term/layout.sh).
 * Not part of the public API.
 */
#ifndef HF_INTERNAL_H
#define HF_INTERNAL_H

#include "floor.h"
#include "dirlock.h"
#include "session_file.h"
#include "registry_fs.h"

#endif

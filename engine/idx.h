/* idx.h — reading IDX files (the format of MNIST and Fashion-MNIST).
 *
 * An IDX file is a 4-byte magic (0x00 0x00 <type> <ndims>), ndims big-endian
 * 32-bit sizes, then the values in row-major order, big-endian. Files may be
 * gzip-compressed (one or more gzip members, each with its CRC-32 and length
 * trailer checked); the reader finds out by itself from the first bytes.
 *
 * Type codes and the dtype each becomes (ember has no int8 or int16, so the
 * narrow signed types widen to int32, which holds every value exactly):
 *   0x08 unsigned byte  -> uint8      0x0C int32   -> int32
 *   0x09 signed byte    -> int32      0x0D float32 -> float32
 *   0x0B int16          -> int32      0x0E float64 -> float64
 */
#ifndef EMBER_IDX_H
#define EMBER_IDX_H

#include "ember.h"

/* Files claiming more data than this are refused before any allocation. */
#define EM_IDX_MAX_BYTES ((uint64_t)16 << 30)

/* Reads the IDX file at path into a new contiguous CPU tensor whose shape is
 * the file's dims. NULL on error, with a message "read_idx: <path>: ..." that
 * says what is wrong (missing file, bad magic, unknown type, bad dims,
 * truncated or corrupt data, a gzip stream cut before its trailer, trailing
 * bytes after the data or after the gzip stream). Never allocates more than the
 * header claims, and a claim the file's size cannot back (a plain file
 * shorter than it, or a gzip file too small to inflate to it) is refused
 * before allocating. */
em_tensor *em_read_idx(const char *path);

#endif

/*
 * mapping.h — tensors whose bytes are a file's, mapped into memory
 * (ember.load(path, {mmap = true}), ember.safe_open).
 *
 * A mapping is the whole file mapped private and writable (MAP_PRIVATE,
 * PROT_READ | PROT_WRITE, from a read-only descriptor): pages are read from
 * the file when first touched, and a write copies the page into memory of
 * the process (copy-on-write), so it never reaches the file. Storages made
 * on it hold a reference each; the file is unmapped when the last storage
 * and the opener have let go. Such a storage never reaches the CPU
 * allocator (cpu/memory.c) or its size-class cache: tensor.c frees it here.
 *
 * What the file holds is read when a page is first touched, not at mapping:
 * a file shortened on disk afterwards makes the process fail with SIGBUS on
 * the next touch of a page past its new end, and a file rewritten in place
 * changes the tensors' untouched pages. Callers check the file's size
 * against what they will read before mapping; changes after it are the
 * user's to avoid (ember.save renames a new file over the old one, which
 * leaves a mapping of the old one as it was).
 */
#ifndef EMBER_MAPPING_H
#define EMBER_MAPPING_H

#include "ember.h"

typedef struct em_mapping em_mapping;

/* Maps the first len bytes (len > 0) of the open file fd, which may then be
 * closed. NULL with an error "<op>: <path>: ..." on failure. */
em_mapping *em_mapping_open(int fd, size_t len, const char *op, const char *path);
/* The first mapped byte (page-aligned). */
const unsigned char *em_mapping_data(const em_mapping *m);
/* Drops the opener's reference (NULL is ignored). */
void em_mapping_release(em_mapping *m);

/* A contiguous CPU tensor on bytes [offset, offset + its size) of m, which
 * it keeps mapped. The caller checks that the range is inside the mapping,
 * has at least one byte, and that offset is a multiple of the dtype's size
 * (kernels read elements at their natural alignment). NULL with an error
 * when out of memory. */
em_tensor *em_tensor_on_mapping(em_mapping *m, size_t offset, const int64_t *sizes, int ndim, em_dtype dtype);

#endif

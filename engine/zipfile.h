/*
 * zipfile.h — the members of a zip archive, read from a file that may be
 * damaged or malicious: the container of PyTorch's torch.save files (the
 * pickle VM that reads those is lua/ember/torchfile.lua).
 *
 * Supported: stored (method 0) and deflated (method 8) members, zip64 sizes
 * and offsets (torch.save always writes the zip64 end records), data
 * descriptors (the central directory's sizes are used). Refused: encrypted
 * members, other methods, archives split over several disks.
 *
 * The central directory is checked against the real file before anything it
 * claims is allocated: every member's data lies between the start of the
 * file and the central directory, names are unique and free of NUL bytes, a
 * stored member's two sizes agree, and a deflated one claims at most 1032
 * times its compressed size (deflate's largest ratio). A member's local
 * header must repeat its name. Reads check the CRC-32 (a CRC of 0 means "not
 * computed", as torch.save writes with set_crc32_options(False)) and that
 * deflate data inflates to exactly the declared size.
 *
 * Errors are "<op>: <path>: ..." (em_error()).
 */
#ifndef EMBER_ZIPFILE_H
#define EMBER_ZIPFILE_H

#include "ember.h"

typedef struct em_zip em_zip;

/* What the first bytes of a file say it is (nothing is checked beyond them;
 * a file that cannot be opened or is not a regular file is EM_FILE_OTHER, so
 * that the caller's own loader reports it). */
typedef enum em_file_kind {
    EM_FILE_OTHER = 0,
    EM_FILE_ZIP,           /* "PK\3\4" or "PK\5\6" (an empty archive) */
    EM_FILE_PICKLE,        /* 0x80 <protocol 2..5>: a bare pickle (PyTorch's format before 1.6) */
} em_file_kind;
em_file_kind em_file_kind_of(const char *path);

/* Opens the archive and reads its central directory; NULL with an error. */
em_zip *em_zip_open(const char *op, const char *path);
void em_zip_close(em_zip *z);
int em_zip_count(const em_zip *z);
/* Member i (0-based): its name and uncompressed size. */
const char *em_zip_name(const em_zip *z, int i);
uint64_t em_zip_size(const em_zip *z, int i);
/* Reads member i whole into buf, which holds exactly em_zip_size(z, i) bytes. */
int em_zip_read(em_zip *z, int i, void *buf);
/* Member i as a 1-D CPU tensor of numel elements of dtype d: the member must
 * hold exactly numel * the dtype's size bytes. swap: the data is big-endian
 * (each element's bytes reversed). Bool bytes are made 0 or 1. */
em_tensor *em_zip_tensor(em_zip *z, int i, em_dtype d, int64_t numel, bool swap);

#endif

/*
 * safetensors.h — checkpoints in the safetensors format
 * (https://github.com/huggingface/safetensors), readable by the reference
 * Python package and by PyTorch tooling.
 *
 * File layout: an 8-byte little-endian u64 N, then N bytes of JSON header
 *   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...,
 *    "__metadata__": {"key": "value"}}
 * padded with spaces so that N is a multiple of 8, then the data section:
 * the raw little-endian, row-major bytes of every tensor, back to back.
 * dtype codes: F32 F64 I64 I32 U8 BOOL F16 BF16 (ember's eight dtypes).
 */
#ifndef EMBER_SAFETENSORS_H
#define EMBER_SAFETENSORS_H

#include "ember.h"

/* Writes n tensors under the given names (unique, non-empty; "__metadata__"
 * is reserved) and nmeta string pairs into the header's "__metadata__"
 * (omitted when nmeta is 0). Header entries and data come in the order the
 * reference writer uses: larger elements first (8-byte dtypes, then 4, 2, 1),
 * in the order given within one size, so that every tensor's data starts at
 * a multiple of its element size (the header is padded to 8 bytes) and a
 * mapped load views it in place. Callers that want a deterministic file sort
 * the names first (the Lua binding does). Tensors on other devices are
 * copied to the host, non-contiguous ones made contiguous.
 *
 * The file is written as savefile.h says: symbolic links followed, a
 * temporary file "<target>.tmp.XXXXXX" beside the target fsynced and renamed
 * over it (a killed save leaves the old file whole; leftovers of killed
 * saves are removed by the next save of the same target), character devices
 * and FIFOs written through, directories refused. On an error the target is
 * as it was and no temporary file is left.
 * Returns 0, or -1 with an error "save: <path>: ...". */
int em_save_safetensors(const char *path, const char *const *names, em_tensor *const *tensors, int n,
                        const char *const *meta_keys, const char *const *meta_values, int nmeta);

/* A loaded file: tensors (CPU, contiguous) in header order, and metadata. */
typedef struct em_checkpoint {
    int n;
    char **names;
    em_tensor **tensors;
    int nmeta;
    char **meta_keys;
    char **meta_values;
} em_checkpoint;

/* Reads a safetensors file. The header is checked against the real file
 * before anything it claims is allocated: a regular file, header length
 * within the file and at most 100 MB, valid UTF-8 JSON without NUL characters
 * in its strings, no duplicate keys, tensor entries with exactly the fields
 * dtype, shape and data_offsets, known dtypes, shapes of non-negative integers
 * whose byte size matches the data offsets, offsets that cover the data
 * section exactly (no holes, no overlap, nothing past the end). Returns NULL
 * with an error "load: <path>: ..." on any problem. Free the result with
 * em_checkpoint_free. Callers may take tensors out of the arrays (set the
 * slot to NULL); em_checkpoint_free skips NULL slots. */
em_checkpoint *em_load_safetensors(const char *path);
void em_checkpoint_free(em_checkpoint *c);

/* The same, with the tensors on a private mapping of the file (mapping.h)
 * instead of read: each tensor is a view of the file's bytes, which are
 * read when first touched, and writes to it are copy-on-write (the file is
 * never changed). Tensors whose data offset is not a multiple of their
 * element size, empty ones, and bool tensors with bytes other than 0 and 1,
 * are copied out of the mapping instead. The mapping lasts while any of its
 * tensors does. The checks are em_load_safetensors's, made before the file
 * is mapped: a file shortened or rewritten on disk afterwards is not seen
 * until its pages are touched (SIGBUS past the new end). */
em_checkpoint *em_load_safetensors_mapped(const char *path);

/* One file opened for reading tensors one at a time (safetensors' safe_open):
 * the header is read and checked as em_load_safetensors does, the file
 * mapped, and nothing else read until a tensor is asked for. */
typedef struct em_safe_file em_safe_file;
/* NULL with an error "<op>: <path>: ..." */
em_safe_file *em_safe_open(const char *op, const char *path);
/* The names (header order) and metadata; its tensors are all NULL. */
const em_checkpoint *em_safe_header(const em_safe_file *f);
/* Whether the header has a "__metadata__" entry (possibly empty). */
bool em_safe_has_metadata(const em_safe_file *f);
/* The index of the tensor called name, or -1. */
int em_safe_find(const em_safe_file *f, const char *name);
/* Tensor i (0-based, header order), a new reference: a view of the mapping,
 * or a copy as em_load_safetensors_mapped says. */
em_tensor *em_safe_tensor(em_safe_file *f, int i);
/* Closes f; the tensors it gave keep the mapping (NULL is ignored). */
void em_safe_close(em_safe_file *f);

#endif

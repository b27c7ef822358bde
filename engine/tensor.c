/* tensor.c — storages and tensor headers: allocation, reference counts and
 * the free lists that keep per-op overhead low.
 *
 * Small storages (up to SMALL_BYTES of data) carry their data inline after
 * the header and are recycled through a free list, so a small op costs no
 * malloc at all once warm. Tensor headers are recycled the same way.
 *
 * Built with EMBER_SANITIZE (make asan), nothing is recycled or inline:
 * every storage and header is its own exact-size allocation, freed at once,
 * so AddressSanitizer sees an overrun of a few bytes and any use after free
 * (cpu/memory.c drops its rounding and cache the same way).
 *
 * A storage may also lie on a file mapping (mapping.h): it keeps the mapping
 * alive and is freed here, never handed to the backend's allocator. */
#include "internal.h"
#include "formulas.h"
#include "debug.h"
#include "mapping.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef EMBER_SANITIZE
#define SMALL_BYTES 0
#define FREE_LIST_MAX 0
#else
#define SMALL_BYTES 256
#define FREE_LIST_MAX 16384
#endif

typedef struct small_storage {
    em_storage s;
    _Alignas(64) unsigned char data[SMALL_BYTES ? SMALL_BYTES : 1];
} small_storage;

static em_tensor *tensor_free_list[FREE_LIST_MAX ? FREE_LIST_MAX : 1];
static int tensor_free_count;
static small_storage *storage_free_list[FREE_LIST_MAX ? FREE_LIST_MAX : 1];
static int storage_free_count;
static size_t bytes_in_use[2];

/* em_storage.owns_data: 0 inline data (small_storage), 1 from the backend's
 * allocator, STORAGE_MAPPED bytes of a file mapping (mapped_storage),
 * STORAGE_PINNED page-locked host memory from the CUDA backend (em_pin_memory). */
#define STORAGE_MAPPED 2
#define STORAGE_PINNED 3

struct em_mapping {
    void *base;
    size_t len;
    int refcount;
};

typedef struct mapped_storage {
    em_storage s;
    em_mapping *map;
} mapped_storage;

static void mapped_storage_free(em_storage *s);

size_t em_bytes_in_use(em_device_type type) { return bytes_in_use[type == EM_CUDA]; }

static em_storage *storage_new(size_t nbytes, em_device dev)
{
    const em_backend *be = em_backend_for(dev);
    if (!be) return NULL;
    em_storage *s;
    if (dev.type == EM_CPU && SMALL_BYTES > 0 && nbytes <= SMALL_BYTES) {
        small_storage *ss = storage_free_count ? storage_free_list[--storage_free_count]
                                               : malloc(sizeof(small_storage));
        if (!ss) { em_set_error("out of memory allocating %zu bytes", nbytes); return NULL; }
        s = &ss->s;
        s->data = ss->data;
        s->owns_data = 0;
    } else {
        s = malloc(sizeof *s);
        if (!s) { em_set_error("out of memory allocating %zu bytes", nbytes); return NULL; }
        s->data = em_device_alloc(be, nbytes ? nbytes : 1, dev.index);
        if (!s->data) { free(s); return NULL; }
        s->owns_data = 1;
    }
    s->nbytes = nbytes;
    s->refcount = 1;
    s->device = dev;
    s->backend = be;
    s->version = 0;
    s->counted = false;
    bytes_in_use[dev.type == EM_CUDA] += nbytes;
    if (em_storage_hook) em_storage_hook(s, true);
    return s;
}

em_storage_hook_fn em_storage_hook;

void em_set_storage_hook(em_storage_hook_fn hook) { em_storage_hook = hook; }

static void storage_release(em_storage *s)
{
    if (--s->refcount > 0) return;
    bytes_in_use[s->device.type == EM_CUDA] -= s->nbytes;
    if (em_storage_hook) em_storage_hook(s, false);
    if (s->owns_data) {
        /* tested here, where large blocks are freed, so that small storages
         * pay nothing for it */
        if (s->owns_data == STORAGE_MAPPED) { mapped_storage_free(s); return; }
        if (s->owns_data == STORAGE_PINNED) {
            /* the CUDA backend made it, so it is loaded */
            const em_backend *cuda = em_backend_for((em_device){EM_CUDA, 0});
            if (cuda) cuda->host_free(s->data, s->nbytes ? s->nbytes : 1);
            free(s);
            return;
        }
        s->backend->free(s->data, s->nbytes ? s->nbytes : 1, s->device.index);
        free(s);
    } else {
        small_storage *ss = (small_storage *)s;
        if (storage_free_count < FREE_LIST_MAX) storage_free_list[storage_free_count++] = ss;
        else free(ss);
    }
}

static em_tensor *header_new(void)
{
    em_tensor *t = tensor_free_count ? tensor_free_list[--tensor_free_count] : malloc(sizeof *t);
    if (!t) { em_set_error("out of memory allocating a tensor header"); return NULL; }
    t->refcount = 1;
    t->wrapped_number = false;
    t->requires_grad = false;
    t->autograd = NULL;
    return t;
}

static void header_free(em_tensor *t)
{
    if (t->autograd) em_ag_free_meta(t);
    if (tensor_free_count < FREE_LIST_MAX) tensor_free_list[tensor_free_count++] = t;
    else free(t);
}

/* Contiguous strides for sizes; returns numel, or -1 on overflow. */
/* Row-major strides; returns the element count, or -1 when a stride (or the
 * count) would exceed `limit`. The strides of an empty tensor count too:
 * [0, 2^61] has a stride of 2^61 elements, whose byte offset would overflow. */
static int64_t contiguous_strides(const int64_t *sizes, int ndim, int64_t *strides, int64_t limit)
{
    int64_t n = 1, span = 1;   /* span: the product with zeros counted as ones */
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = n;
        int64_t s = sizes[i] ? sizes[i] : 1;
        if (span > limit / s) return -1;
        span *= s;
        n *= sizes[i];
    }
    return n;
}

em_tensor *em_empty(const int64_t *sizes, int ndim, em_dtype dtype, em_device dev)
{
    char buf[128];
    if (ndim < 0 || ndim > EM_MAX_DIMS)
        return em_set_error("empty: %d dimensions (at most %d supported)", ndim, EM_MAX_DIMS), NULL;
    if ((unsigned)dtype >= EM_NDTYPES) return em_set_error("empty: invalid dtype %d", (int)dtype), NULL;
    for (int i = 0; i < ndim; i++)
        if (sizes[i] < 0)
            return em_set_error("empty: negative dimension in size %s",
                                em_sizes_str(sizes, ndim, buf, sizeof buf)), NULL;
    em_tensor *t = header_new();
    if (!t) return NULL;
    size_t esz = em_dtype_size(dtype);
    int64_t n = contiguous_strides(sizes, ndim, t->strides, (int64_t)(((uint64_t)1 << 62) / esz));
    if (n < 0) {
        header_free(t);
        return em_set_error("empty: size %s is too large", em_sizes_str(sizes, ndim, buf, sizeof buf)), NULL;
    }
    t->storage = storage_new((size_t)n * esz, dev);
    if (!t->storage) {
        header_free(t);
        if (strncmp(em_error(), "out of memory", 13) == 0) {
            char dbuf[32];
            em_set_error("out of memory: a %s tensor of size %s needs %llu bytes on %s", em_dtype_name(dtype),
                         em_sizes_str(sizes, ndim, buf, sizeof buf), (unsigned long long)n * esz,
                         em_device_str(dev, dbuf, sizeof dbuf));
        }
        return NULL;
    }
    if (ndim > 0) memcpy(t->sizes, sizes, sizeof(int64_t) * (size_t)ndim);
    t->ndim = ndim;
    t->dtype = dtype;
    t->offset = 0;
    return t;
}

bool em_is_pinned(const em_tensor *t) { return t->storage->owns_data == STORAGE_PINNED; }

em_tensor *em_pin_memory(const em_tensor *t)
{
    char dbuf[32];
    if (t->storage->device.type != EM_CPU)
        return em_set_error("pin_memory: only CPU tensors can be pinned, got one on %s",
                            em_device_str(t->storage->device, dbuf, sizeof dbuf)), NULL;
    if (t->requires_grad && em_grad_enabled())
        return em_set_error("pin_memory: a tensor that requires grad (pin t:detach(), as a loader's batches are)"),
               NULL;
    if (em_is_pinned(t)) return em_retain((em_tensor *)t);
    const em_backend *cuda = em_backend_for((em_device){EM_CUDA, 0});
    if (!cuda) {
        char why[256];
        snprintf(why, sizeof why, "%s", em_error());
        return em_set_error("pin_memory: page-locked memory needs a CUDA device (%s)", why), NULL;
    }
    em_tensor *r = header_new();
    if (!r) return NULL;
    size_t esz = em_dtype_size(t->dtype);
    int64_t n = contiguous_strides(t->sizes, t->ndim, r->strides, (int64_t)(((uint64_t)1 << 62) / esz));
    em_storage *s = n >= 0 ? malloc(sizeof *s) : NULL;
    if (!s) {
        header_free(r);
        return em_set_error("pin_memory: out of memory for a tensor of %lld elements", (long long)n), NULL;
    }
    size_t nbytes = (size_t)n * esz;
    s->data = cuda->host_alloc(nbytes);
    if (!s->data) {
        free(s);
        header_free(r);
        return NULL;
    }
    s->nbytes = nbytes;
    s->refcount = 1;
    s->device = t->storage->device;
    s->backend = t->storage->backend;   /* the CPU's: the bytes are host memory, its kernels read them */
    s->version = 0;
    s->owns_data = STORAGE_PINNED;
    s->counted = false;
    bytes_in_use[0] += nbytes;
    if (em_storage_hook) em_storage_hook(s, true);
    r->storage = s;
    if (t->ndim > 0) memcpy(r->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
    r->ndim = t->ndim;
    r->dtype = t->dtype;
    r->offset = 0;
    if (em_copy_(r, t)) {
        em_release(r);
        return NULL;
    }
    return r;
}

em_tensor *em_empty_like(const em_tensor *t)
{
    return em_empty(t->sizes, t->ndim, t->dtype, t->storage->device);
}

em_tensor *em_retain(em_tensor *t)
{
    t->refcount++;
    return t;
}

void em_release(em_tensor *t)
{
    if (!t || --t->refcount > 0) return;
    storage_release(t->storage);
    header_free(t);
}

/* A new header on t's storage; sizes/strides are filled in by the caller. */
em_tensor *em_header_on(const em_tensor *t)
{
    em_tensor *v = header_new();
    if (!v) return NULL;
    v->storage = t->storage;
    t->storage->refcount++;
    v->dtype = t->dtype;
    v->offset = t->offset;
    v->ndim = t->ndim;
    return v;
}

em_tensor *em_alias(const em_tensor *t)
{
    em_tensor *v = em_header_on(t);
    if (!v) return NULL;
    memcpy(v->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
    memcpy(v->strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
    return v;
}

int64_t em_numel(const em_tensor *t) { return emf_numel(t); }

bool em_is_contiguous(const em_tensor *t) { return emf_is_contiguous(t); }

size_t em_storage_bytes(const em_tensor *t) { return t->storage->nbytes; }

void em_bump_version(em_tensor *t) { t->storage->version++; }

int em_set_data_(em_tensor *t, const em_tensor *src)
{
    if (t == src) return 0;
    if (!em_is_leaf(t))
        return em_set_error("data: cannot replace the data of a tensor autograd computed (grad_fn %s); "
                            "set the data of the leaf, or detach it first", em_grad_fn_name(t));
    if (t->requires_grad && !em_dtype_is_float(src->dtype))
        return em_set_error("data: a tensor that requires grad needs floating point data, got %s",
                            em_dtype_name(src->dtype));
    src->storage->refcount++;
    storage_release(t->storage);
    t->storage = src->storage;
    t->offset = src->offset;
    t->ndim = src->ndim;
    t->dtype = src->dtype;
    memcpy(t->sizes, src->sizes, sizeof t->sizes);
    memcpy(t->strides, src->strides, sizeof t->strides);
    return 0;
}

/* ---- storages on a file mapping (mapping.h) ------------------------------- */

em_mapping *em_mapping_open(int fd, size_t len, const char *op, const char *path)
{
    em_mapping *m = malloc(sizeof *m);
    if (!m) return em_set_error("%s: %s: out of memory", op, path), NULL;
    /* MAP_NORESERVE: no swap is set aside for pages that are never written */
    m->base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
    if (m->base == MAP_FAILED) {
        em_set_error("%s: %s: cannot map %zu bytes: %s", op, path, len, strerror(errno));
        free(m);
        return NULL;
    }
    m->len = len;
    m->refcount = 1;
    return m;
}

const unsigned char *em_mapping_data(const em_mapping *m) { return m->base; }

void em_mapping_release(em_mapping *m)
{
    if (!m || --m->refcount > 0) return;
    munmap(m->base, m->len);
    free(m);
}

em_tensor *em_tensor_on_mapping(em_mapping *m, size_t offset, const int64_t *sizes, int ndim, em_dtype dtype)
{
    em_device cpu = {EM_CPU, 0};
    const em_backend *be = em_backend_for(cpu);
    if (!be) return NULL;
    em_tensor *t = header_new();
    if (!t) return NULL;
    mapped_storage *ms = malloc(sizeof *ms);
    if (!ms) {
        header_free(t);
        return em_set_error("out of memory allocating a storage"), NULL;
    }
    size_t esz = em_dtype_size(dtype);
    int64_t n = contiguous_strides(sizes, ndim, t->strides, (int64_t)(((uint64_t)1 << 62) / esz));
    if (n < 0) {
        free(ms);
        header_free(t);
        return em_set_error("size %s is too large", em_sizes_tmp(sizes, ndim)), NULL;
    }
    em_storage *s = &ms->s;
    s->data = (unsigned char *)m->base + offset;
    s->nbytes = (size_t)n * esz;
    s->refcount = 1;
    s->device = cpu;
    s->backend = be;
    s->version = 0;
    s->owns_data = STORAGE_MAPPED;
    /* the binding counts new storages' bytes toward a collection; these cost
     * no memory until touched, so they are marked as counted already */
    s->counted = true;
    ms->map = m;
    m->refcount++;
    bytes_in_use[0] += s->nbytes;
    t->storage = s;
    if (ndim > 0) memcpy(t->sizes, sizes, sizeof(int64_t) * (size_t)ndim);
    t->ndim = ndim;
    t->dtype = dtype;
    t->offset = 0;
    return t;
}

static void mapped_storage_free(em_storage *s)
{
    mapped_storage *ms = (mapped_storage *)s;
    em_mapping_release(ms->map);
    free(ms);
}

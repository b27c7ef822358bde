/* device.c — finding the backend for a device. The CUDA backend is a shared
 * object opened on first use, so a CPU session never loads a CUDA library. */
#include "ember.h"
#include "backend.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static const em_backend *cuda_backend;
static char cuda_failure[512];

static const em_backend *load_cuda(void)
{
    if (cuda_backend) return cuda_backend;
    if (cuda_failure[0]) return NULL;
    const char *env = getenv("EMBER_CUDA_LIB");
    const char *names[] = {env, "libember_cuda.so", NULL};
    const char *why = "libember_cuda.so not found";
    for (int i = 0; i < 2; i++) {
        if (!names[i]) continue;
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) { why = dlerror(); continue; }
        const em_backend *(*init)(char *, size_t) =
            (const em_backend *(*)(char *, size_t))dlsym(h, "em_cuda_backend_init");
        if (!init) { why = "libember_cuda.so has no em_cuda_backend_init"; dlclose(h); continue; }
        cuda_backend = init(cuda_failure, sizeof cuda_failure);
        if (cuda_backend) return cuda_backend;
        why = cuda_failure;
        break;
    }
    snprintf(cuda_failure, sizeof cuda_failure, "%s", why);
    return NULL;
}

const em_backend *em_backend_for(em_device dev)
{
    if (dev.type == EM_CPU) return &em_cpu_backend;
    const em_backend *be = load_cuda();
    if (!be) {
        em_set_error("no CUDA device: %s", cuda_failure);
        return NULL;
    }
    return be;
}

int em_synchronize(em_device dev)
{
    const em_backend *be = em_backend_for(dev);
    if (!be) return -1;
    return be->synchronize(dev.index);
}

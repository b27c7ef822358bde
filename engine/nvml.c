/* nvml.c — GPU monitoring through NVML (libnvidia-ml.so.1, the library
 * behind nvidia-smi): utilisation, memory, temperature, power.
 *
 * The library is opened with dlopen on the first call that needs it, never
 * at start-up and never linked: a CPU session, or a machine without the
 * driver, does not load it. $EMBER_NVML_LIBRARY names another file to open
 * instead (a test's fake, or a driver installed outside the loader's path).
 * Types and prototypes are declared here, not taken from nvml.h, so the
 * CPU-only build needs no CUDA toolkit; they follow NVML's stable ABI (the
 * _v2/_v3 entry points, which every driver since r418 exports).
 *
 * NVML numbers GPUs in PCI bus order (as nvidia-smi does); CUDA numbers them
 * fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, and only those that
 * CUDA_VISIBLE_DEVICES leaves. So a CUDA device is found among NVML's by its
 * PCI bus id, which both report. */
#include "internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvml_return;        /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct nvml_device_st *nvml_device;
typedef struct { unsigned int gpu, memory; } nvml_utilization;
typedef struct { unsigned long long total, free, used; } nvml_memory;
typedef struct {                /* nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3 fills it */
    char bus_id_legacy[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} nvml_pci_info;

enum { NVML_TEMPERATURE_GPU = 0 };

static struct {
    nvml_return (*init)(void);
    nvml_return (*device_count)(unsigned int *n);
    nvml_return (*handle_by_index)(unsigned int i, nvml_device *d);
    nvml_return (*name)(nvml_device d, char *buf, unsigned int n);
    nvml_return (*uuid)(nvml_device d, char *buf, unsigned int n);
    nvml_return (*pci_info)(nvml_device d, nvml_pci_info *p);
    nvml_return (*utilization)(nvml_device d, nvml_utilization *u);
    nvml_return (*memory)(nvml_device d, nvml_memory *m);
    nvml_return (*temperature)(nvml_device d, int sensor, unsigned int *celsius);
    nvml_return (*power_usage)(nvml_device d, unsigned int *milliwatts);
    nvml_return (*power_limit)(nvml_device d, unsigned int *milliwatts);
    nvml_return (*driver_version)(char *buf, unsigned int n);
    const char *(*error_string)(nvml_return r);
} nv;

static void *handle;
static char load_error[512];    /* why NVML is unavailable, kept: the answer does not change */

/* Under EMBER_CUDA=emu the emulated device's library answers for NVML too
 * (one fake GPU, the emulated one). */
static const char *library_name(void)
{
    static char emu_lib[4096];
    const char *env = getenv("EMBER_NVML_LIBRARY");
    if (env && *env) return env;
    const char *mode = getenv("EMBER_CUDA");
    if (mode && strcmp(mode, "emu") == 0) {
        if (!emu_lib[0]) em_lib_beside_engine(emu_lib, sizeof emu_lib, "libember_cuda_emu.so");
        return emu_lib[0] ? emu_lib : "libember_cuda_emu.so";
    }
    return "libnvidia-ml.so.1";
}

/* Looks up the first of the names the library exports. */
static bool find(void **slot, const char *name, const char *fallback)
{
    *slot = dlsym(handle, name);
    if (!*slot && fallback) *slot = dlsym(handle, fallback);
    if (*slot) return true;
    snprintf(load_error, sizeof load_error, "%.300s has no %s", library_name(), name);
    return false;
}

static bool open_library(void)
{
    handle = dlopen(library_name(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "%.300s not found: %.190s", library_name(), why ? why : "dlopen failed");
        return false;
    }
    bool ok = find((void **)&nv.init, "nvmlInit_v2", NULL) &&
              find((void **)&nv.device_count, "nvmlDeviceGetCount_v2", NULL) &&
              find((void **)&nv.handle_by_index, "nvmlDeviceGetHandleByIndex_v2", NULL) &&
              find((void **)&nv.name, "nvmlDeviceGetName", NULL) &&
              find((void **)&nv.uuid, "nvmlDeviceGetUUID", NULL) &&
              find((void **)&nv.pci_info, "nvmlDeviceGetPciInfo_v3", NULL) &&
              find((void **)&nv.utilization, "nvmlDeviceGetUtilizationRates", NULL) &&
              find((void **)&nv.memory, "nvmlDeviceGetMemoryInfo", NULL) &&
              find((void **)&nv.temperature, "nvmlDeviceGetTemperature", NULL) &&
              find((void **)&nv.power_usage, "nvmlDeviceGetPowerUsage", NULL) &&
              /* the enforced limit is what the GPU obeys; older drivers have only the set one */
              find((void **)&nv.power_limit, "nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetPowerManagementLimit") &&
              find((void **)&nv.driver_version, "nvmlSystemGetDriverVersion", NULL) &&
              find((void **)&nv.error_string, "nvmlErrorString", NULL);
    if (ok) {
        nvml_return r = nv.init();
        if (r == 0) return true;
        snprintf(load_error, sizeof load_error, "nvmlInit failed: %s", nv.error_string(r));
    }
    dlclose(handle);
    handle = NULL;
    return false;
}

/* Opens NVML on first use; -1 + "op: NVML is not available (...)". */
static int ready(const char *op)
{
    static bool tried;
    if (!tried) {
        tried = true;
        open_library();
    }
    if (handle) return 0;
    return em_set_error("%s: NVML is not available (%s)", op, load_error);
}

bool em_nvml_is_loaded(void) { return handle != NULL; }

int em_nvml_device_count(const char *op)
{
    if (ready(op)) return -1;
    unsigned int n = 0;
    nvml_return r = nv.device_count(&n);
    if (r) return em_set_error("%s: NVML could not count the GPUs: %s", op, nv.error_string(r));
    return (int)n;
}

static int device_handle(const char *op, int index, nvml_device *d)
{
    int n = em_nvml_device_count(op);
    if (n < 0) return -1;
    if (index < 0 || index >= n)
        return em_set_error("%s: GPU %d: no such device (NVML reports %d GPU%s)", op, index, n, n == 1 ? "" : "s");
    nvml_return r = nv.handle_by_index((unsigned int)index, d);
    if (r) return em_set_error("%s: GPU %d: NVML: %s", op, index, nv.error_string(r));
    return 0;
}

int em_nvml_driver_version(const char *op, char *buf, size_t n)
{
    if (ready(op)) return -1;
    nvml_return r = nv.driver_version(buf, (unsigned int)n);
    if (r) return em_set_error("%s: NVML: %s", op, nv.error_string(r));
    return 0;
}

int em_nvml_device_info(const char *op, int index, em_gpu_info *out)
{
    nvml_device d;
    if (device_handle(op, index, &d)) return -1;
    memset(out, 0, sizeof *out);
    nvml_pci_info pci;
    nvml_return r = nv.name(d, out->name, sizeof out->name);
    if (!r) r = nv.uuid(d, out->uuid, sizeof out->uuid);
    if (!r) r = nv.pci_info(d, &pci);
    if (r) return em_set_error("%s: GPU %d: NVML: %s", op, index, nv.error_string(r));
    snprintf(out->bus_id, sizeof out->bus_id, "%04x:%02x:%02x.0", pci.domain, pci.bus, pci.device);
    return 0;
}

static const char *metric_name(em_gpu_metric m)
{
    switch (m) {
    case EM_GPU_UTILIZATION: return "utilization";
    case EM_GPU_MEMORY_UTILIZATION: return "memory utilization";
    case EM_GPU_MEMORY_USED: return "memory used";
    case EM_GPU_MEMORY_TOTAL: return "total memory";
    case EM_GPU_TEMPERATURE: return "temperature";
    case EM_GPU_POWER_DRAW: return "power draw";
    case EM_GPU_POWER_LIMIT: return "power limit";
    default: return "?";
    }
}

static nvml_return read_metric(nvml_device d, em_gpu_metric m, int64_t *value)
{
    nvml_utilization u;
    nvml_memory mem;
    unsigned int v = 0;
    nvml_return r;
    switch (m) {
    case EM_GPU_UTILIZATION:
    case EM_GPU_MEMORY_UTILIZATION:
        r = nv.utilization(d, &u);
        *value = m == EM_GPU_UTILIZATION ? u.gpu : u.memory;
        return r;
    case EM_GPU_MEMORY_USED:
    case EM_GPU_MEMORY_TOTAL:
        r = nv.memory(d, &mem);
        *value = (int64_t)(m == EM_GPU_MEMORY_USED ? mem.used : mem.total);
        return r;
    case EM_GPU_TEMPERATURE: r = nv.temperature(d, NVML_TEMPERATURE_GPU, &v); break;
    case EM_GPU_POWER_DRAW: r = nv.power_usage(d, &v); break;
    case EM_GPU_POWER_LIMIT: r = nv.power_limit(d, &v); break;
    default: return 2;          /* NVML_ERROR_INVALID_ARGUMENT */
    }
    *value = v;
    return r;
}

int em_nvml_read(const char *op, int index, em_gpu_metric m, int64_t *value)
{
    nvml_device d;
    if (device_handle(op, index, &d)) return -1;
    nvml_return r = read_metric(d, m, value);
    if (r) return em_set_error("%s: GPU %d: NVML cannot read its %s: %s", op, index, metric_name(m), nv.error_string(r));
    return 0;
}

/* "0000:65:00.0" (CUDA) and NVML's fields name the same slot. */
static bool same_slot(const char *cuda_bus_id, const nvml_pci_info *p)
{
    unsigned int domain, bus, dev;
    if (sscanf(cuda_bus_id, "%x:%x:%x", &domain, &bus, &dev) != 3) return false;
    return domain == p->domain && bus == p->bus && dev == p->device;
}

/* NVML's number of the GPU in PCI slot bus_id, -1 when NVML has none. */
static int index_of_slot(const char *bus_id, int n)
{
    for (int i = 0; i < n; i++) {
        nvml_device d;
        nvml_pci_info pci;
        if (nv.handle_by_index((unsigned int)i, &d) == 0 && nv.pci_info(d, &pci) == 0 && same_slot(bus_id, &pci))
            return i;
    }
    return -1;
}

int em_nvml_index_of_cuda(const char *op, int cuda_index)
{
    int n = em_nvml_device_count(op);
    if (n < 0) return -1;
    int ncuda = em_cuda_device_count();
    if (ncuda < 0) {
        /* no CUDA backend: the index is NVML's own (nvidia-smi's) */
        char why[400];
        snprintf(why, sizeof why, "%s", em_error());
        if (cuda_index < 0 || cuda_index >= n)
            return em_set_error("%s: cuda:%d: no such device (NVML reports %d GPU%s, numbered as nvidia-smi does, "
                                "since ember's CUDA backend has none: %s)", op, cuda_index, n, n == 1 ? "" : "s", why);
        return cuda_index;
    }
    if (cuda_index < 0 || cuda_index >= ncuda)
        return em_set_error("%s: cuda:%d: no such device (this machine has %d CUDA device%s)", op, cuda_index, ncuda,
                            ncuda == 1 ? "" : "s");
    char bus_id[32];
    if (em_cuda_pci_bus_id(cuda_index, bus_id, sizeof bus_id)) return -1;
    int i = index_of_slot(bus_id, n);
    if (i < 0)
        return em_set_error("%s: cuda:%d (PCI %s) is not among NVML's %d GPU%s", op, cuda_index, bus_id, n,
                            n == 1 ? "" : "s");
    return i;
}

int em_nvml_cuda_index(int index)
{
    if (!handle || !em_cuda_is_initialized()) return -1;
    int ncuda = em_cuda_device_count();
    nvml_device d;
    nvml_pci_info pci;
    if (nv.handle_by_index((unsigned int)index, &d) || nv.pci_info(d, &pci)) return -1;
    for (int k = 0; k < ncuda; k++) {
        char bus_id[32];
        if (em_cuda_pci_bus_id(k, bus_id, sizeof bus_id) == 0 && same_slot(bus_id, &pci)) return k;
    }
    return -1;
}

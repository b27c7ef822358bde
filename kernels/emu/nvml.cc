/*
 * nvml.cc — NVML's answers for the emulated device, so that ember's
 * monitoring (engine/nvml.c, ember.cuda's utilization and memory queries,
 * the shell's :gpu) runs under EMBER_CUDA=emu: one GPU whose PCI bus id is
 * the one cudaDeviceGetPCIBusId gives, its memory the emulator's, a fixed
 * temperature and power. The types are NVML's public ABI (nvml.h is not in
 * the toolkit's include folder), as engine/nvml.c declares them.
 */
#include "runtime.h"

#include <stdio.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

enum { NVML_OK = 0, NVML_UNINITIALIZED = 1, NVML_INVALID_ARGUMENT = 2, NVML_INSUFFICIENT_SIZE = 7 };

static int initialized;
static char the_device;         /* its handle's address */

static nvmlReturn_t checked(nvmlDevice_t d)
{
    if (!initialized) return NVML_UNINITIALIZED;
    return d == (nvmlDevice_t)&the_device ? NVML_OK : NVML_INVALID_ARGUMENT;
}

static nvmlReturn_t copy(char *buf, unsigned int n, const char *s)
{
    if (!buf) return NVML_INVALID_ARGUMENT;
    if (strlen(s) + 1 > n) return NVML_INSUFFICIENT_SIZE;
    memcpy(buf, s, strlen(s) + 1);
    return NVML_OK;
}

extern "C" {

nvmlReturn_t nvmlInit_v2(void)
{
    initialized = 1;
    return NVML_OK;
}

nvmlReturn_t nvmlShutdown(void)
{
    initialized = 0;
    return NVML_OK;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case NVML_OK: return "Success";
    case NVML_UNINITIALIZED: return "Uninitialized";
    case NVML_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_INSUFFICIENT_SIZE: return "Insufficient Size";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
    if (!initialized) return NVML_UNINITIALIZED;
    if (!n) return NVML_INVALID_ARGUMENT;
    *n = 1;
    return NVML_OK;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
    if (!initialized) return NVML_UNINITIALIZED;
    if (i != 0 || !d) return NVML_INVALID_ARGUMENT;
    *d = (nvmlDevice_t)&the_device;
    return NVML_OK;
}

/* a version in the driver's form (the CUDA version the emulator follows) */
nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int n) { return copy(buf, n, "13.0 (emulated)"); }

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned int n)
{
    nvmlReturn_t r = checked(d);
    return r ? r : copy(buf, n, emu::props().name);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int n)
{
    nvmlReturn_t r = checked(d);
    return r ? r : copy(buf, n, "GPU-00000000-0000-0000-0000-0000000e0e0e");
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
{
    nvmlReturn_t r = checked(d);
    if (r) return r;
    if (!p) return NVML_INVALID_ARGUMENT;
    const cudaDeviceProp &pr = emu::props();
    memset(p, 0, sizeof *p);
    p->domain = (unsigned)pr.pciDomainID;
    p->bus = (unsigned)pr.pciBusID;
    p->device = (unsigned)pr.pciDeviceID;
    p->pciDeviceId = 0x233010de;        /* an H100's device and vendor ids */
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%04X:%02X:%02X.0", p->domain, p->bus, p->device);
    snprintf(p->busId, sizeof p->busId, "%08X:%02X:%02X.0", p->domain, p->bus, p->device);
    return NVML_OK;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    nvmlReturn_t r = checked(d);
    if (r) return r;
    if (!u) return NVML_INVALID_ARGUMENT;
    u->gpu = 0;         /* nothing runs on it between synchronisations */
    u->memory = 0;
    return NVML_OK;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    nvmlReturn_t r = checked(d);
    if (r) return r;
    if (!m) return NVML_INVALID_ARGUMENT;
    m->total = emu::config().memory;
    m->used = emu::device_in_use();
    m->free = m->total > m->used ? m->total - m->used : 0;
    return NVML_OK;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *t)
{
    nvmlReturn_t r = checked(d);
    if (r) return r;
    if (sensor != 0 || !t) return NVML_INVALID_ARGUMENT;
    *t = 40;
    return NVML_OK;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw)
{
    nvmlReturn_t r = checked(d);
    if (r) return r;
    if (!mw) return NVML_INVALID_ARGUMENT;
    *mw = 70000;
    return NVML_OK;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw)
{
    nvmlReturn_t r = checked(d);
    if (r) return r;
    if (!mw) return NVML_INVALID_ARGUMENT;
    *mw = 700000;
    return NVML_OK;
}

} // extern "C"

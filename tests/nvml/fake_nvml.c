/* fake_nvml.c — a stand-in for libnvidia-ml.so.1 with fixed answers, so the
 * monitoring code runs without a GPU: tests point EMBER_NVML_LIBRARY at it
 * (make builds it as build/tests-lib/libfake_nvml.so). Two GPUs, in NVML's
 * order; the values are the ones tests/lua/nvml_spec.lua and
 * tests/shell/gpu_test.sh expect. GPU 1 reports no power limit (as some
 * boards do), so the "not supported" path runs too. */
#include <stdio.h>
#include <string.h>

typedef int nvmlReturn_t;
enum { OK = 0, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, INSUFFICIENT_SIZE = 7 };
typedef struct { int index; } fake_device;
typedef fake_device *nvmlDevice_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

static fake_device devices[2] = {{0}, {1}};
static const struct {
    const char *name, *uuid;
    unsigned int bus, utilization, memory_utilization, temperature, power, power_limit;
    unsigned long long total, used;
} gpu[2] = {
    {"Fake GPU A100", "GPU-00000000-1111-2222-3333-444444444444", 0x17, 37, 21, 45, 123456, 400000,
     42949672960ULL, 1073741824ULL},
    {"Fake GPU H100", "GPU-55555555-6666-7777-8888-999999999999", 0x65, 12, 3, 61, 98765, 0,
     85899345920ULL, 3221225472ULL},
};
static int initialized;

static nvmlReturn_t copy(char *buf, unsigned int n, const char *s)
{
    if (strlen(s) + 1 > n) return INSUFFICIENT_SIZE;
    memcpy(buf, s, strlen(s) + 1);
    return OK;
}

static int which(nvmlDevice_t d) { return d == &devices[0] ? 0 : d == &devices[1] ? 1 : -1; }

nvmlReturn_t nvmlInit_v2(void) { initialized = 1; return OK; }
nvmlReturn_t nvmlShutdown(void) { initialized = 0; return OK; }

const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case OK: return "Success";
    case INVALID_ARGUMENT: return "Invalid Argument";
    case NOT_SUPPORTED: return "Not Supported";
    case INSUFFICIENT_SIZE: return "Insufficient Size";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) { *n = 2; return OK; }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
    if (!initialized || i >= 2) return INVALID_ARGUMENT;
    *d = &devices[i];
    return OK;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int n) { return copy(buf, n, "535.999.01"); }

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned int n)
{
    int i = which(d);
    return i < 0 ? INVALID_ARGUMENT : copy(buf, n, gpu[i].name);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int n)
{
    int i = which(d);
    return i < 0 ? INVALID_ARGUMENT : copy(buf, n, gpu[i].uuid);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
{
    int i = which(d);
    if (i < 0) return INVALID_ARGUMENT;
    memset(p, 0, sizeof *p);
    p->domain = 0;
    p->bus = gpu[i].bus;
    p->device = 0;
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "0000:%02X:00.0", gpu[i].bus);
    snprintf(p->busId, sizeof p->busId, "00000000:%02X:00.0", gpu[i].bus);
    return OK;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    int i = which(d);
    if (i < 0) return INVALID_ARGUMENT;
    u->gpu = gpu[i].utilization;
    u->memory = gpu[i].memory_utilization;
    return OK;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    int i = which(d);
    if (i < 0) return INVALID_ARGUMENT;
    m->total = gpu[i].total;
    m->used = gpu[i].used;
    m->free = gpu[i].total - gpu[i].used;
    return OK;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *t)
{
    int i = which(d);
    if (i < 0 || sensor != 0) return INVALID_ARGUMENT;
    *t = gpu[i].temperature;
    return OK;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw)
{
    int i = which(d);
    if (i < 0) return INVALID_ARGUMENT;
    *mw = gpu[i].power;
    return OK;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw)
{
    int i = which(d);
    if (i < 0) return INVALID_ARGUMENT;
    if (gpu[i].power_limit == 0) return NOT_SUPPORTED;
    *mw = gpu[i].power_limit;
    return OK;
}

/* bind_monitor.c — GPU monitoring in ember.cuda, as PyTorch's torch.cuda:
 *   ember.cuda.utilization([device]) -> percent of the last sample period a kernel ran
 *   ember.cuda.memory_usage([device]) -> percent of it device memory was read or written
 *   ember.cuda.temperature([device]) -> degrees Celsius
 *   ember.cuda.power_draw([device]) -> milliwatts
 *   ember.cuda.mem_get_info([device]) -> free, total bytes (cudaMemGetInfo, not NVML)
 * and, ember's own, ember.cuda.gpu_status() -> every GPU NVML sees (what
 * the shell's :gpu prints). A device is nil (cuda:0), an index or "cuda:N".
 * NVML is opened by engine/nvml.c on the first call, never before. */
#include "binding.h"

#include <stdio.h>
#include <string.h>

static int push_metric(lua_State *L, const char *op, em_gpu_metric m)
{
    int i = em_nvml_index_of_cuda(op, emlua_cuda_index(L, 1, op));
    int64_t v;
    if (i < 0 || em_nvml_read(op, i, m, &v)) return emlua_fail(L);
    lua_pushinteger(L, (lua_Integer)v);
    return 1;
}

static int utilization(lua_State *L) { return push_metric(L, "ember.cuda.utilization", EM_GPU_UTILIZATION); }
static int memory_usage(lua_State *L) { return push_metric(L, "ember.cuda.memory_usage", EM_GPU_MEMORY_UTILIZATION); }
static int temperature(lua_State *L) { return push_metric(L, "ember.cuda.temperature", EM_GPU_TEMPERATURE); }
static int power_draw(lua_State *L) { return push_metric(L, "ember.cuda.power_draw", EM_GPU_POWER_DRAW); }

static int mem_get_info(lua_State *L)
{
    const char *op = "ember.cuda.mem_get_info";
    size_t free_b = 0, total_b = 0;
    if (em_cuda_mem_get_info(emlua_cuda_index(L, 1, op), &free_b, &total_b)) {
        char why[600];
        snprintf(why, sizeof why, "%s", em_error());
        em_set_error("%s: %s", op, why);
        return emlua_fail(L);
    }
    lua_pushinteger(L, (lua_Integer)free_b);
    lua_pushinteger(L, (lua_Integer)total_b);
    return 2;
}

static void set_integer(lua_State *L, const char *name, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, name);
}

/* One GPU's row: fields the GPU does not report are left out (nil). */
static void push_gpu(lua_State *L, const char *op, int i)
{
    static const struct { const char *name; em_gpu_metric m; } metrics[] = {
        {"utilization", EM_GPU_UTILIZATION}, {"memory_usage", EM_GPU_MEMORY_UTILIZATION},
        {"memory_used", EM_GPU_MEMORY_USED}, {"memory_total", EM_GPU_MEMORY_TOTAL},
        {"temperature", EM_GPU_TEMPERATURE}, {"power_draw", EM_GPU_POWER_DRAW},
        {"power_limit", EM_GPU_POWER_LIMIT},
    };
    em_gpu_info info;
    if (em_nvml_device_info(op, i, &info)) emlua_fail(L);
    lua_createtable(L, 0, 12);
    set_integer(L, "index", i);
    lua_pushstring(L, info.name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, info.uuid);
    lua_setfield(L, -2, "uuid");
    lua_pushstring(L, info.bus_id);
    lua_setfield(L, -2, "pci_bus_id");
    int k = em_nvml_cuda_index(i);
    if (k >= 0) set_integer(L, "cuda", k);
    for (size_t m = 0; m < sizeof metrics / sizeof metrics[0]; m++) {
        int64_t v;
        if (em_nvml_read(op, i, metrics[m].m, &v) == 0) set_integer(L, metrics[m].name, (lua_Integer)v);
    }
}

static int gpu_status(lua_State *L)
{
    const char *op = "ember.cuda.gpu_status";
    int n = em_nvml_device_count(op);
    char version[96];
    if (n < 0 || em_nvml_driver_version(op, version, sizeof version)) return emlua_fail(L);
    lua_createtable(L, n, 1);
    lua_pushstring(L, version);
    lua_setfield(L, -2, "driver_version");
    for (int i = 0; i < n; i++) {
        push_gpu(L, op, i);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static const luaL_Reg monitor_funcs[] = {
    {"utilization", utilization}, {"memory_usage", memory_usage}, {"temperature", temperature},
    {"power_draw", power_draw}, {"mem_get_info", mem_get_info}, {"gpu_status", gpu_status},
    {NULL, NULL},
};

void emlua_open_monitor(lua_State *L)
{
    /* the module table is at the top of the stack, its cuda table made */
    lua_getfield(L, -1, "cuda");
    luaL_setfuncs(L, monitor_funcs, 0);
    lua_pop(L, 1);
}

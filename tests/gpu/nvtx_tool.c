/* nvtx_tool.c — a stand-in for Nsight Systems in tests/gpu/debug_tools_spec.lua:
 * an NVTX injection library (the way nsys attaches itself: NVTX_INJECTION64_PATH
 * names it, and the first NVTX call in the process loads it and calls
 * InitializeInjectionNvtx2). It takes over RangePushA and RangePop and writes
 * one line per call to the file named by NVTX_TOOL_LOG: "push NAME" or "pop".
 *   cc -shared -fPIC -I$CUDA_HOME/include tests/gpu/nvtx_tool.c -o nvtx_tool.so */
#include <nvtx3/nvToolsExt.h>

#include <stdio.h>
#include <stdlib.h>

static FILE *out;

static int push(const char *name)
{
    fprintf(out, "push %s\n", name);
    fflush(out);
    return 0;
}

static int pop(void)
{
    fputs("pop\n", out);
    fflush(out);
    return 0;
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table)
{
    const char *path = getenv("NVTX_TOOL_LOG");
    out = path ? fopen(path, "w") : NULL;
    if (!out) return 0;
    const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get_table(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable table;
    unsigned int size;
    if (!cb || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || size <= NVTX_CBID_CORE_RangePop)
        return 0;
    *table[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)push;
    *table[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)pop;
    fputs("attached\n", out);
    fflush(out);
    return 1;
}

/* debug.h — the engine's hooks for finding bugs in a program: anomaly mode
 * (ember.autograd.detect_anomaly), the backward pass's timing hook
 * (ember.profiler) and the storages' lifetimes (ember.memory). Beside ember.h rather than in it: only
 * the binding needs these, and ember.h is read by every CUDA kernel.
 *
 * In anomaly mode every autograd node can carry a text, the traceback of the
 * forward call that made it (the binding attaches it when it hands the
 * result to Lua), and a backward pass checks what each node returns: a
 * node's failure or a NaN in a gradient it returns stops the pass with an
 * error naming the node, and em_anomaly_trace() gives that node's text. */
#ifndef EMBER_DEBUG_H
#define EMBER_DEBUG_H

#include <stdbool.h>

#include "ember.h"

extern bool em_anomaly_mode;             /* read on the binding's hot path */
void em_set_anomaly(bool on, bool check_nan);
bool em_anomaly_check_nan(void);
/* Gives text (malloc'd, taken over) to the node that made t when it has
 * none yet; frees it otherwise. */
void em_anomaly_attach(const em_tensor *t, char *text);
/* Whether the node that made t still lacks a text (false for leaves). */
bool em_anomaly_wants_trace(const em_tensor *t);
/* The text of the node whose backward failed in the last failed pass, or
 * NULL; valid until the next pass. */
const char *em_anomaly_trace(void);

/* Profiling (ember.profiler): while set, a backward pass calls hook with
 * each node's name before (begin) and after (!begin) the node computes its
 * gradients, so the backward's time is seen node by node. */
typedef void (*em_node_hook_fn)(const char *name, bool begin);
extern em_node_hook_fn em_node_hook;
void em_set_node_hook(em_node_hook_fn hook);

/* Memory history (ember.memory.record_history): while set, the hook hears
 * of every storage made (alive) and freed (!alive). em_ag_running_node()
 * names the backward node computing now (NULL outside a backward pass), so
 * the memory a backward makes can be told by node. */
typedef void (*em_storage_hook_fn)(const em_storage *s, bool alive);
extern em_storage_hook_fn em_storage_hook;
void em_set_storage_hook(em_storage_hook_fn hook);
const char *em_ag_running_node(void);

/* Named ranges for a GPU profiler's timeline (NVTX through the CUDA backend,
 * once it is loaded; nothing otherwise). Pushes and pops pair up per thread. */
void em_range_push(const char *name);
void em_range_pop(void);

#endif

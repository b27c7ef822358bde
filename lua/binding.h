/* binding.h — shared helpers of the Lua binding (the C files in lua/).
 *
 * A tensor is a full userdata holding one em_tensor* reference, with the
 * metatable registered as EMLUA_TENSOR. Each bind_*.c file registers its
 * functions through emlua_register(): `methods` go into the tensor method
 * table (t:name(...)), `functions` into the module table (ember.name(...));
 * a C function listed in both serves both spellings, since a method's self
 * is its argument 1.
 *
 * Conventions every binding follows:
 *  - dims and index positions given by the user are 1-based (negative counts
 *    from the end); emlua_check_dim converts to the engine's 0-based dims;
 *  - keyword arguments come as a trailing options table;
 *  - an engine failure (NULL / non-zero) is raised with emlua_fail(L), which
 *    turns em_error() into a Lua error;
 *  - argument errors go through emlua_argerror(), which prints
 *    "<op>: argument N: <message>" with N counted as the user sees it (for a
 *    method call, self is not counted).
 */
#ifndef EMBER_BINDING_H
#define EMBER_BINDING_H

#include <lua.h>
#include <lauxlib.h>
#include <stdbool.h>

#include "../engine/ember.h"

#define EMLUA_TENSOR "ember.Tensor"

/* tensors on the stack */
em_tensor *emlua_test(lua_State *L, int idx);                  /* NULL if not a tensor */
em_tensor *emlua_check(lua_State *L, int idx, const char *op);  /* raises if not */
/* Pushes t (stealing the reference). t == NULL raises em_error() instead. */
int emlua_push(lua_State *L, em_tensor *t);
/* ember.memory's recording (bind_memory.c): the line that made each storage */
extern bool emlua_mem_recording;
void emlua_mem_seen(lua_State *L, const em_tensor *t);       /* t is handed to Lua */
void emlua_mem_backward(lua_State *L, bool begin);           /* around a backward pass */
void emlua_mem_top_lines(lua_State *L, int n);               /* pushes "line N MB, ..." or "" */
double emlua_host_free_bytes(void);                          /* MemAvailable, -1 unknown */
/* seconds on a monotonic clock, the one ember.wall_time() reads */
double emlua_now(void);
/* ember.debug.stop_on_nan (bind_debug.c): t, about to be handed to Lua, checked */
extern bool emlua_nan_stop;
void emlua_nan_check(lua_State *L, const em_tensor *t);
/* reads the device checks stop_on_nan queued (at a synchronisation) */
void emlua_nan_poll(lua_State *L);
/* Raises em_error() as a Lua error. Never returns. */
int emlua_fail(lua_State *L);
/* The end of a method that changes its object in place: emlua_fail when rc
 * (the engine call's status) is nonzero, else the object (argument 1).
 * Inline: copy_, fill_ and the other in-place ops are on the per-op path. */
static inline int emlua_push_self(lua_State *L, int rc)
{
    if (rc) return emlua_fail(L);
    lua_settop(L, 1);
    return 1;
}
/* Ctrl-C for C code: the shell sets this from its signal handler (safe
 * there) so that long waits inside the engine give up. */
void emlua_set_interrupt(bool on);
/* The shell runs a program's top level in a thread of its own (for Ctrl-C
 * and the debugger), where lua_isyieldable is true; marked, it counts as the
 * main thread for what tells a coroutine of the program's own apart
 * (ember.no_grad(fn) letting fn yield), as under plain lua. */
void emlua_mark_top_thread(lua_State *L, lua_State *co);
bool emlua_in_coroutine(lua_State *L);
/* Raises "<op>: argument N: <fmt...>". Never returns. */
int emlua_argerror(lua_State *L, int arg, const char *op, const char *fmt, ...);
/* "expected <what>, got <typename>" */
int emlua_typeerror(lua_State *L, int arg, const char *op, const char *what);
/* A file name argument: a non-empty string without zero bytes (the C name
 * would end at one: another file than the one named); raises otherwise. */
const char *emlua_check_path(lua_State *L, int idx, const char *op);
/* A pointer boxed in a full userdata (metatable mt) at idx, taken out: the
 * box holds NULL after, so a second close or __gc finds it empty. For the
 * __gc and close functions of such boxes. */
void *emlua_unbox(lua_State *L, int idx, const char *mt);
/* A writable copy of the string argument at idx (its length in *len), in a
 * userdata pushed onto the stack, which the collector frees. */
char *emlua_string_copy(lua_State *L, int idx, size_t *len);

/* A tensor, or a number turned into a 0-d "wrapped number" tensor on the
 * device of `like` (may be NULL: CPU). Returns a new reference. */
em_tensor *emlua_check_operand(lua_State *L, int idx, const char *op, const em_tensor *like);
/* Whether the value at idx is an integer that a double would change (past
 * 2^53) meeting an int64 tensor t: then the op must take it as a tensor
 * from emlua_check_operand, not as a double. */
bool emlua_exact_integer_operand(lua_State *L, const em_tensor *t, int idx);
/* The same for a value headed for dtype d (full, fill_): d is int64 and the
 * integer at idx is past 2^53. */
bool emlua_exact_integer_value(lua_State *L, int idx, em_dtype d);
/* t (a new reference, stolen) filled with the integer at idx exactly, as
 * emlua_exact_integer_value asks; NULL (t released) on an error. */
em_tensor *emlua_fill_exact(lua_State *L, em_tensor *t, int idx, const char *op);
/* An index argument: a tensor, or a flat table of integers (made int64 on
 * the CPU). Returns a new reference. */
em_tensor *emlua_check_index(lua_State *L, int idx, const char *op);
/* The index ix (stolen) read from argument arg, on t's device: one the user
 * gave as a tensor stays where it is (the op checks it), one made from a
 * table or a number (on the CPU) is moved. Returns a new reference. */
em_tensor *emlua_index_on(lua_State *L, int arg, em_tensor *ix, const em_tensor *t);
/* The first n entries of the table at idx as integers, into out. Returns 0,
 * or the 1-based position of the first entry that is not an integer (for
 * the caller's error). */
lua_Integer emlua_table_integers(lua_State *L, int idx, lua_Integer n, int64_t *out);

/* numbers */
lua_Integer emlua_check_integer(lua_State *L, int idx, const char *op);
lua_Integer emlua_opt_integer(lua_State *L, int idx, const char *op, lua_Integer def);
double emlua_check_number(lua_State *L, int idx, const char *op);
double emlua_opt_number(lua_State *L, int idx, const char *op, double def);
bool emlua_opt_boolean(lua_State *L, int idx, const char *op, bool def);

/* A 1-based (or negative) dim at idx -> 0-based engine dim for a tensor of
 * `ndim` dims; raises with the op name when out of range. */
int emlua_check_dim(lua_State *L, int idx, int ndim, const char *op);
int emlua_opt_dim(lua_State *L, int idx, int ndim, const char *op, int def);
/* A user dim d (1-based, negative from the end) given at idx as the engine's
 * dim (0-based, or still negative), its range left to the engine: for ops
 * where the number of dims is the engine's to work out. Raises only for 0
 * or a value no tensor could have. */
int emlua_loose_dim(lua_State *L, int idx, lua_Integer d, const char *op);
/* A dim list: nil (returns 0: all dims), a number, or a table of numbers.
 * Writes 0-based dims into dims[EM_MAX_DIMS]; returns the count. */
int emlua_opt_dims(lua_State *L, int idx, int ndim, const char *op, int *dims);
/* A size given as numbers from idx to the top (ember.zeros(2, 3)) or as one
 * table ({2, 3}) or a tensor's shape table. Stops at a trailing options
 * table. Returns ndim and fills sizes. */
int emlua_check_sizes(lua_State *L, int idx, const char *op, int64_t *sizes);

/* Options tables: the value of field `name` in the table at idx (if idx is a
 * table), else the default. */
em_dtype emlua_opt_dtype(lua_State *L, int idx, const char *op, em_dtype def);
em_device emlua_opt_device(lua_State *L, int idx, const char *op, em_device def);
/* An ember.device object (ember.device("cuda", 1)) at idx is replaced there by
 * its name ("cuda:1"), so that every device argument reads a string; other
 * values are left as they are. */
void emlua_device_arg(lua_State *L, int idx);
/* The CUDA device index an argument names: nil (0), an index, "cuda",
 * "cuda:N" or an ember.device object; raises, naming op, for anything else.
 * Not checked against the devices present (em_cuda_check_device does). */
int emlua_cuda_index(lua_State *L, int idx, const char *op);
/* the device of factories called without one (ember.set_default_device; "cpu" at first) */
em_device emlua_default_device(void);
/* A dtype given as a string or an ember.<dtype> constant at idx. */
em_dtype emlua_check_dtype(lua_State *L, int idx, const char *op);
/* Field of an options table as a number/boolean, with a default. */
double emlua_opt_field_number(lua_State *L, int idx, const char *name, const char *op, double def);
bool emlua_opt_field_boolean(lua_State *L, int idx, const char *name, const char *op, bool def);
/* The index of a trailing options table (a plain table, not a tensor, without
 * a [1]) among arguments first..top, nils after it allowed, or 0. */
int emlua_options_index(lua_State *L, int first);
/* raises "op: unknown option 'k'" for a key of the options table at opts (0: none) not in names
 * (NULL: none is known) */
void emlua_check_option_names(lua_State *L, int opts, const char *op, const char *const *names);
/* The arguments from first on of an op that takes only keywords there
 * (PyTorch's `*`, as alpha and out): nothing, or one options table with keys
 * in names (a NULL-terminated list; NULL: no keywords, so nothing may follow
 * but nils and an empty table). Returns the table's index or 0; raises for an
 * extra positional argument or an unknown key. */
int emlua_keywords(lua_State *L, int first, const char *op, const char *const *names);
/* Pushes r, the result of op (stealing the reference; NULL raises the engine's
 * error), or with {out = t} in the options table at opts (0: none) writes r
 * into t and pushes t: PyTorch's out=, with its checks (the same device, a
 * dtype r casts to safely, r's shape, no gradient to record). */
int emlua_push_out(lua_State *L, em_tensor *r, int opts, const char *op);
/* {"out", NULL}: the keywords of an op whose only keyword is out */
extern const char *const emlua_out_only[];
/* The options table at idx (a plain table, not a tensor): returns idx, or 0
 * when nothing is there; raises "expected <what>" for anything else. */
int emlua_opt_table(lua_State *L, int idx, const char *op, const char *what);

/* Arguments after the required ones, positional in PyTorch's order or as one
 * trailing options table with its keyword names: emlua_args_start() finds the
 * table (refusing keywords not in names, a NULL-terminated list), then
 * argument k (0-based among the optional ones, names[k]) is read by position
 * (first + k) or from the table. Values read from the table are pushed onto
 * the stack. Absent or nil: the default (NULL for tensors). Wrong types raise
 * "<op>: argument N: <name> must be ...". */
typedef struct emlua_args {
    lua_State *L;
    const char *op;
    int first;              /* stack index of the first optional argument */
    int opts;               /* the options table's index, or 0 */
    const char *const *names;
} emlua_args;
void emlua_args_start(emlua_args *a, lua_State *L, const char *op, int first, const char *const *names);
/* the index of the last argument that is not nil, or keep when none above it is:
 * the arguments a call gave, trailing nils dropped (f(x, nil) is f(x)) */
static inline int emlua_top(lua_State *L, int keep)
{
    int top = lua_gettop(L);
    while (top > keep && lua_isnil(L, top)) top--;
    return top;
}
/* the length of a NULL-terminated list of names (count - 1: all but a trailing "out") */
static inline int emlua_count_names(const char *const *names)
{
    int n = 0;
    while (names[n]) n++;
    return n;
}
/* emlua_args_start for an op whose names from npos on are keyword-only
 * (PyTorch's after `*`: out, generator, stable): only the options table may
 * hold them, so a value in their place by position is refused, not taken for
 * them. */
void emlua_args_start_kw(emlua_args *a, lua_State *L, const char *op, int first, const char *const *names, int npos);
int emlua_arg_at(emlua_args *a, int k);     /* a stack index, or 0 when absent */
bool emlua_arg_bool(emlua_args *a, int k, bool def);
double emlua_arg_number(emlua_args *a, int k, double def);
int64_t emlua_arg_integer(emlua_args *a, int k, int64_t def);
int emlua_arg_dim(emlua_args *a, int k, int ndim, int def);   /* a dim of a tensor of ndim dims, 0-based */
em_tensor *emlua_arg_tensor(emlua_args *a, int k);

/* Pushes a newly created tensor (stealing the reference), first applying
 * the creation option {requires_grad = true} of the options table at opts
 * (0: none). */
int emlua_push_created(lua_State *L, em_tensor *t, int opts, const char *op);
/* empty()'s result as use_deterministic_algorithms wants it: filled with NaN
 * (floats) or the dtype's largest value when ember.utils.deterministic.
 * fill_uninitialized_memory is on (PyTorch's), else as it is. NULL (t
 * released) on an error. */
em_tensor *emlua_uninitialized(em_tensor *t);
/* op(size..., [{dtype=, device=, requires_grad=}]) made by fn: zeros, ones,
 * empty, rand, randn */
typedef em_tensor *(*emlua_sized_fn)(const int64_t *sizes, int ndim, em_dtype d, em_device dev);
int emlua_create_sized(lua_State *L, const char *op, emlua_sized_fn fn);

/* registration */
void emlua_register(lua_State *L, const luaL_Reg *methods, const luaL_Reg *functions);
/* pops the value at the top into the ember module table as field name */
void emlua_set_module_field(lua_State *L, const char *name);
void emlua_push_methods(lua_State *L);     /* the tensor method table */
/* Registers the metatable `name` of a userdata class (once per state): the
 * table of methods (NULL: none) as __index, and __gc, __close, __tostring
 * where given (NULL: unset). Leaves the stack as it was. */
void emlua_new_class(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction gc,
                     lua_CFunction close, lua_CFunction tostring);
/* A tensor method written in Lua (lua/ember/composite.lua and its parts), loaded
 * with those files the first time a name is missing: pushes it and returns 1, or
 * returns 0 (nothing pushed) when name is not one of them. */
int emlua_lazy_method(lua_State *L, const char *name);
void emlua_push_metatable(lua_State *L);   /* the tensor metatable */
int luaopen_ember(lua_State *L);

/* Each bind file provides one opener; ember.c calls them all. */
void emlua_open_tensor(lua_State *L);      /* tensor.c: creation, views, operators, access */
void emlua_open_elementwise(lua_State *L); /* bind_elementwise.c */
void emlua_open_reduce(lua_State *L);      /* bind_reduce.c */
void emlua_open_index(lua_State *L);       /* bind_index.c */
void emlua_open_linalg(lua_State *L);      /* bind_linalg.c: matmul family */
void emlua_open_random(lua_State *L);      /* bind_random.c: Generator, seeding, random ops */
void emlua_open_io(lua_State *L);          /* bind_io.c: ember.save / ember.load (safetensors) */
void emlua_open_data(lua_State *L);        /* bind_data.c: ember.read_idx */
void emlua_open_autograd(lua_State *L);    /* bind_autograd.c: backward, grad, no_grad, hooks */
void emlua_open_optim(lua_State *L);        /* bind_optim.c: fused optimizer steps */
void emlua_open_cuda(lua_State *L);         /* bind_cuda.c: ember.cuda, ember.backends */
void emlua_open_plot(lua_State *L);         /* bind_plot.c: ember._plot, the C half of ember.plot */
void emlua_open_nn(lua_State *L);           /* bind_nn.c: convolutions, pooling, normalisation */
void emlua_open_attention(lua_State *L);    /* bind_attention.c: scaled_dot_product_attention */
void emlua_open_shape(lua_State *L);        /* bind_shape.c: flip, roll, repeat, diag, ... */
void emlua_open_einsum(lua_State *L);       /* bind_einsum.c: einsum, tensordot, kron, cross, cdist */
void emlua_open_lapack(lua_State *L);       /* bind_lapack.c: ember.linalg (decompositions, solves) */
void emlua_open_autocast(lua_State *L);     /* autocast.c: ember.autocast's C half */
void emlua_open_distributed(lua_State *L);  /* bind_distributed.c: ember.distributed's C half */
void emlua_open_monitor(lua_State *L);      /* bind_monitor.c: GPU monitoring in ember.cuda (NVML) */
void emlua_open_profile(lua_State *L);      /* bind_profile.c: ember.profiler's C half */
void emlua_open_memory(lua_State *L);       /* bind_memory.c: ember.memory's C half */
void emlua_open_debug(lua_State *L);        /* bind_debug.c: ember.debug's C half */
void emlua_open_tensorboard(lua_State *L);  /* bind_tensorboard.c: ember._tensorboard (event records, PNG) */
void emlua_open_tokenizer(lua_State *L);     /* bind_tokenizer.c: ember._tokenizer_* (the C half of ember.hf.tokenizer) */

/* format.c: tostring(t) as PyTorch prints it */
int emlua_tostring(lua_State *L);
/* Pushes the string PyTorch would print for tensor t. */
void emlua_format_tensor(lua_State *L, const em_tensor *t);
/* torch.set_printoptions: digits after the point, the element count above
 * which a print is summarised, the items kept at each end of a summarised
 * dim, the line width, and the notation (auto: chosen from the values). */
typedef enum emlua_sci_mode { EMLUA_SCI_AUTO, EMLUA_SCI_ON, EMLUA_SCI_OFF } emlua_sci_mode;
typedef struct emlua_print_options {
    int precision;
    double threshold;
    int edgeitems;
    int linewidth;
    emlua_sci_mode sci_mode;
} emlua_print_options;
#define EMLUA_PRINT_OPTIONS_DEFAULT {4, 1000, 3, 80, EMLUA_SCI_AUTO}
emlua_print_options emlua_get_print_options(void);
void emlua_set_print_options(emlua_print_options o);

#endif

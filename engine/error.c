/* error.c — the engine's error channel: one message buffer, set by the
 * failing function and read by the caller (the Lua binding turns it into a
 * Lua error). Nothing here longjmps or exits. */
#include "internal.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static char last_error[1024];

const char *em_error(void) { return last_error[0] ? last_error : "unknown error"; }

void em_clear_error(void) { last_error[0] = '\0'; }

static volatile sig_atomic_t interrupt_flag;

void em_set_interrupt(bool on) { interrupt_flag = on; }
bool em_interrupt_requested(void) { return interrupt_flag != 0; }

int em_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return -1;
}

void em_rename_error(const char *from, const char *to)
{
    size_t n = strlen(from);
    if (strncmp(last_error, from, n) != 0 || last_error[n] != ':') return;
    char rest[sizeof last_error];
    snprintf(rest, sizeof rest, "%s", last_error + n);
    em_set_error("%s%s", to, rest);
}

char *em_sizes_str(const int64_t *sizes, int ndim, char *buf, size_t n)
{
    size_t used = 0;
    if (n == 0) return buf;
    buf[0] = '\0';
    used += (size_t)snprintf(buf + used, n - used, "[");
    for (int i = 0; i < ndim && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, i ? ",%lld" : "%lld", (long long)sizes[i]);
    if (used < n) snprintf(buf + used, n - used, "]");
    return buf;
}

char *em_shape_str(const em_tensor *t, char *buf, size_t n)
{
    return em_sizes_str(t->sizes, t->ndim, buf, n);
}

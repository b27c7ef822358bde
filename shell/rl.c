/* rl.c — opens GNU Readline on first use (rl.h says why). */
#include "rl.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

emsh_rl_lib emsh_rl;

/* each name rl.h uses, and where its address goes */
static const struct { const char *name; size_t at; } names[] = {
    {"readline", offsetof(emsh_rl_lib, sym_readline)},
    {"rl_set_keyboard_input_timeout", offsetof(emsh_rl_lib, sym_rl_set_keyboard_input_timeout)},
    {"rl_check_signals", offsetof(emsh_rl_lib, sym_rl_check_signals)},
    {"rl_filename_completion_function", offsetof(emsh_rl_lib, sym_rl_filename_completion_function)},
    {"rl_bind_key", offsetof(emsh_rl_lib, sym_rl_bind_key)},
    {"rl_insert", offsetof(emsh_rl_lib, sym_rl_insert)},
    {"add_history", offsetof(emsh_rl_lib, sym_add_history)},
    {"history_get_history_state", offsetof(emsh_rl_lib, sym_history_get_history_state)},
    {"history_set_history_state", offsetof(emsh_rl_lib, sym_history_set_history_state)},
    {"using_history", offsetof(emsh_rl_lib, sym_using_history)},
    {"stifle_history", offsetof(emsh_rl_lib, sym_stifle_history)},
    {"read_history", offsetof(emsh_rl_lib, sym_read_history)},
    {"history_get", offsetof(emsh_rl_lib, sym_history_get)},
    {"append_history", offsetof(emsh_rl_lib, sym_append_history)},
    {"history_truncate_file", offsetof(emsh_rl_lib, sym_history_truncate_file)},
    {"rl_instream", offsetof(emsh_rl_lib, sym_rl_instream)},
    {"rl_getc_function", offsetof(emsh_rl_lib, sym_rl_getc_function)},
    {"rl_input_available_hook", offsetof(emsh_rl_lib, sym_rl_input_available_hook)},
    {"rl_readline_name", offsetof(emsh_rl_lib, sym_rl_readline_name)},
    {"rl_line_buffer", offsetof(emsh_rl_lib, sym_rl_line_buffer)},
    {"rl_point", offsetof(emsh_rl_lib, sym_rl_point)},
    {"rl_readline_state", offsetof(emsh_rl_lib, sym_rl_readline_state)},
    {"rl_completion_append_character", offsetof(emsh_rl_lib, sym_rl_completion_append_character)},
    {"rl_filename_completion_desired", offsetof(emsh_rl_lib, sym_rl_filename_completion_desired)},
    {"rl_attempted_completion_over", offsetof(emsh_rl_lib, sym_rl_attempted_completion_over)},
    {"rl_completion_word_break_hook", offsetof(emsh_rl_lib, sym_rl_completion_word_break_hook)},
    {"rl_attempted_completion_function", offsetof(emsh_rl_lib, sym_rl_attempted_completion_function)},
    {"rl_completer_word_break_characters", offsetof(emsh_rl_lib, sym_rl_completer_word_break_characters)},
    {"rl_completer_quote_characters", offsetof(emsh_rl_lib, sym_rl_completer_quote_characters)},
    {"history_comment_char", offsetof(emsh_rl_lib, sym_history_comment_char)},
    {"history_write_timestamps", offsetof(emsh_rl_lib, sym_history_write_timestamps)},
    {"history_multiline_entries", offsetof(emsh_rl_lib, sym_history_multiline_entries)},
    {"history_length", offsetof(emsh_rl_lib, sym_history_length)},
    {"history_base", offsetof(emsh_rl_lib, sym_history_base)},
};

bool emsh_rl_open(void)
{
    static int state;   /* 0: not tried, 1: open, -1: failed */
    if (state) return state > 0;
    state = -1;
    /* the basic REPL asked for (as Python's PYTHON_BASIC_REPL): a terminal
     * of its own editing, an emulator's shell buffer, a screen reader */
    const char *basic = getenv("EMBER_BASIC_REPL");
    if (basic && *basic) return false;
    void *h = dlopen("libreadline.so.8", RTLD_NOW | RTLD_GLOBAL);
    if (!h) h = dlopen("libreadline.so", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        fprintf(stderr, "ember: line editing is off: %s\n", dlerror());
        return false;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *p = dlsym(h, names[i].name);
        if (!p) {
            fprintf(stderr, "ember: line editing is off: libreadline has no %s\n", names[i].name);
            return false;
        }
        memcpy((char *)&emsh_rl + names[i].at, &p, sizeof p);
    }
    state = 1;
    return true;
}

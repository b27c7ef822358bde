/* rl.h — GNU Readline, opened on first use.
 *
 * Loading libreadline (and libtinfo) at start-up costs every run of ember
 * about 490,000 instructions of dynamic linking, a fifth of `ember -e ''`,
 * while only a session at a terminal reads lines with it: the REPL, the
 * (dbg) prompt and `ember --attach`. So the executable does not link it;
 * emsh_rl_open() opens it with dlopen the first time one of those needs it,
 * and the readline names the shell uses stand, after this header, for the
 * library's own functions and variables (`readline(p)`, `rl_point = 0`, ...
 * read as before).
 *
 * Include this header instead of <readline/readline.h> and
 * <readline/history.h>, and call emsh_rl_open() (true once the library is
 * there) before the first use of any of these names. */
#ifndef EMBER_RL_H
#define EMBER_RL_H

#include <stdbool.h>
#include <stdio.h>

#include <readline/history.h>
#include <readline/readline.h>

typedef struct emsh_rl_lib {
    /* the functions */
    char *(*sym_readline)(const char *);
    int (*sym_rl_set_keyboard_input_timeout)(int);
    void (*sym_rl_check_signals)(void);
    char *(*sym_rl_filename_completion_function)(const char *, int);
    int (*sym_rl_bind_key)(int, rl_command_func_t *);
    rl_command_func_t *sym_rl_insert;
    void (*sym_add_history)(const char *);
    HISTORY_STATE *(*sym_history_get_history_state)(void);
    void (*sym_history_set_history_state)(HISTORY_STATE *);
    void (*sym_using_history)(void);
    void (*sym_stifle_history)(int);
    int (*sym_read_history)(const char *);
    HIST_ENTRY *(*sym_history_get)(int);
    int (*sym_append_history)(int, const char *);
    int (*sym_history_truncate_file)(const char *, int);
    /* the variables: their addresses */
    FILE **sym_rl_instream;
    rl_getc_func_t **sym_rl_getc_function;
    rl_hook_func_t **sym_rl_input_available_hook;
    const char **sym_rl_readline_name;
    char **sym_rl_line_buffer;
    int *sym_rl_point;
    unsigned long *sym_rl_readline_state;
    int *sym_rl_completion_append_character;
    int *sym_rl_filename_completion_desired;
    int *sym_rl_attempted_completion_over;
    rl_cpvfunc_t **sym_rl_completion_word_break_hook;
    rl_completion_func_t **sym_rl_attempted_completion_function;
    const char **sym_rl_completer_word_break_characters;
    const char **sym_rl_completer_quote_characters;
    char *sym_history_comment_char;
    int *sym_history_write_timestamps;
    int *sym_history_multiline_entries;
    int *sym_history_length;
    int *sym_history_base;
} emsh_rl_lib;

extern emsh_rl_lib emsh_rl;

/* Opens the library and finds every name above, once; false (and a message
 * on stderr the first time) when it cannot. */
bool emsh_rl_open(void);

#define readline                           (*emsh_rl.sym_readline)
#define rl_set_keyboard_input_timeout      (*emsh_rl.sym_rl_set_keyboard_input_timeout)
#define rl_check_signals                   (*emsh_rl.sym_rl_check_signals)
#define rl_filename_completion_function    (*emsh_rl.sym_rl_filename_completion_function)
#define rl_bind_key                        (*emsh_rl.sym_rl_bind_key)
#define rl_insert                          (*emsh_rl.sym_rl_insert)
#define add_history                        (*emsh_rl.sym_add_history)
#define history_get_history_state          (*emsh_rl.sym_history_get_history_state)
#define history_set_history_state          (*emsh_rl.sym_history_set_history_state)
#define using_history                      (*emsh_rl.sym_using_history)
#define stifle_history                     (*emsh_rl.sym_stifle_history)
#define read_history                       (*emsh_rl.sym_read_history)
#define history_get                        (*emsh_rl.sym_history_get)
#define append_history                     (*emsh_rl.sym_append_history)
#define history_truncate_file              (*emsh_rl.sym_history_truncate_file)

#define rl_instream                        (*emsh_rl.sym_rl_instream)
#define rl_getc_function                   (*emsh_rl.sym_rl_getc_function)
#define rl_input_available_hook            (*emsh_rl.sym_rl_input_available_hook)
#define rl_readline_name                   (*emsh_rl.sym_rl_readline_name)
#define rl_line_buffer                     (*emsh_rl.sym_rl_line_buffer)
#define rl_point                           (*emsh_rl.sym_rl_point)
#define rl_readline_state                  (*emsh_rl.sym_rl_readline_state)
#define rl_completion_append_character     (*emsh_rl.sym_rl_completion_append_character)
#define rl_filename_completion_desired     (*emsh_rl.sym_rl_filename_completion_desired)
#define rl_attempted_completion_over       (*emsh_rl.sym_rl_attempted_completion_over)
#define rl_completion_word_break_hook      (*emsh_rl.sym_rl_completion_word_break_hook)
#define rl_attempted_completion_function   (*emsh_rl.sym_rl_attempted_completion_function)
#define rl_completer_word_break_characters (*emsh_rl.sym_rl_completer_word_break_characters)
#define rl_completer_quote_characters      (*emsh_rl.sym_rl_completer_quote_characters)
#define history_comment_char               (*emsh_rl.sym_history_comment_char)
#define history_write_timestamps           (*emsh_rl.sym_history_write_timestamps)
#define history_multiline_entries          (*emsh_rl.sym_history_multiline_entries)
#define history_length                     (*emsh_rl.sym_history_length)
#define history_base                       (*emsh_rl.sym_history_base)

#endif

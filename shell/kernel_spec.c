/* kernel_spec.c — `ember --install-kernel [--user] [--prefix P]`: writes
 * the kernelspec (kernels/ember/kernel.json) where Jupyter looks for it:
 *   --prefix P   P/share/jupyter/kernels/ember (a virtual environment, a test)
 *   --user       the user's Jupyter data directory: $JUPYTER_DATA_DIR, else
 *                $XDG_DATA_HOME/jupyter, else ~/.local/share/jupyter (what
 *                `jupyter --data-dir` prints on Linux)
 *   (neither)    /usr/local/share/jupyter/kernels/ember, for every user
 * The spec starts this very executable (its absolute path) with --kernel. */
#include "shell.h"

#include <cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(const char *what, const char *path)
{
    fprintf(stderr, "%s: --install-kernel: %s %s: %s\n", emsh_progname, what, path, strerror(errno));
    return EXIT_FAILURE;
}

/* mkdir -p */
static int make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        int rc = mkdir(path, 0755);
        *p = '/';
        if (rc != 0 && errno != EEXIST) return -1;
    }
    return mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* The data directory for --user in buf. */
static int user_data_dir(char *buf, size_t n)
{
    const char *jd = getenv("JUPYTER_DATA_DIR"), *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    if (jd && jd[0]) return snprintf(buf, n, "%s", jd) < (int)n ? 0 : -1;
    if (xdg && xdg[0]) return snprintf(buf, n, "%s/jupyter", xdg) < (int)n ? 0 : -1;
    if (home && home[0]) return snprintf(buf, n, "%s/.local/share/jupyter", home) < (int)n ? 0 : -1;
    return -1;
}

int emsh_install_kernel(int argc, char **argv)
{
    bool user = false;
    const char *prefix = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--user") == 0) {
            user = true;
        } else if (strcmp(argv[i], "--prefix") == 0 && i + 1 < argc) {
            prefix = argv[++i];
        } else {
            fprintf(stderr, "%s: --install-kernel: unexpected argument '%s' (--user, --prefix DIR)\n",
                    emsh_progname, argv[i]);
            return EXIT_FAILURE;
        }
    }
    char base[PATH_MAX], dir[PATH_MAX + 32], file[PATH_MAX + 64], self[PATH_MAX];
    if (prefix) snprintf(base, sizeof base, "%s/share/jupyter", prefix);
    else if (user && user_data_dir(base, sizeof base) != 0) {
        fprintf(stderr, "%s: --install-kernel --user: no HOME, JUPYTER_DATA_DIR or XDG_DATA_HOME\n", emsh_progname);
        return EXIT_FAILURE;
    } else if (!user) snprintf(base, sizeof base, "/usr/local/share/jupyter");
    snprintf(dir, sizeof dir, "%s/kernels/ember", base);
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return fail("cannot find", "/proc/self/exe");
    self[len] = '\0';
    if (make_dirs(dir) != 0) return fail("cannot create", dir);

    cJSON *spec = cJSON_CreateObject();
    cJSON *args = cJSON_AddArrayToObject(spec, "argv");
    cJSON_AddItemToArray(args, cJSON_CreateString(self));
    cJSON_AddItemToArray(args, cJSON_CreateString("--kernel"));
    cJSON_AddItemToArray(args, cJSON_CreateString("{connection_file}"));
    cJSON_AddStringToObject(spec, "display_name", "ember (Lua 5.4)");
    cJSON_AddStringToObject(spec, "language", "lua");
    cJSON_AddStringToObject(spec, "interrupt_mode", "signal");
    cJSON_AddObjectToObject(spec, "metadata");
    char *text = cJSON_Print(spec);
    cJSON_Delete(spec);
    snprintf(file, sizeof file, "%s/kernel.json", dir);
    FILE *f = fopen(file, "w");
    if (!f || !text) {
        free(text);
        if (f) fclose(f);
        return fail("cannot write", file);
    }
    bool ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    ok = fclose(f) == 0 && ok;
    free(text);
    if (!ok) return fail("cannot write", file);
    printf("installed the ember kernelspec in %s\n", dir);
    return EXIT_SUCCESS;
}

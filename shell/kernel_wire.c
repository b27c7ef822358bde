/* kernel_wire.c — the Jupyter messaging protocol's wire format: the
 * connection file, the multipart frames of a message, their HMAC signature.
 *
 * A message on the wire is
 *   identities..., "<IDS|MSG>", signature, header, parent_header, metadata,
 *   content, buffers...
 * where the signature is the hex HMAC (the connection file's scheme, in
 * practice hmac-sha256) of the four JSON frames as they are, with the
 * connection file's key; an empty key means no signing. A received message
 * whose signature does not match, or whose header is not a JSON object
 * with a msg_type, is logged on stderr and dropped: the sender cannot be
 * trusted with a reply. So is one whose header holds a NUL character, and
 * a content that holds one is refused (bad_content, an error reply): cJSON
 * ends its strings at a NUL, so "print(1)\u0000os.exit(9)" would run as
 * print(1), and "kernel_info_request\u0000..." pass as kernel_info_request.
 * Refusing is what is left: the REPL's entry path is C strings throughout,
 * and no front end sends one (a Lua string holding a NUL says "\0").
 * Invalid UTF-8 in any string a client sends is cleaned on receipt, so the
 * code, the history and the echoed header are valid JSON for strict
 * readers. Every function here is safe to call from any thread on its own
 * socket (the key is read-only once loaded). */
#include "shell.h"

#include <cJSON.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/time.h>
#include <time.h>
#include <zmq.h>

#define DELIM "<IDS|MSG>"

#define LOG_DETAIL_MAX 200

void ekw_log(const char *fmt, const char *detail)
{
    char cut[LOG_DETAIL_MAX + sizeof "..."];
    if (!detail) detail = "";
    if (strnlen(detail, LOG_DETAIL_MAX + 1) > LOG_DETAIL_MAX) {
        snprintf(cut, sizeof cut, "%.*s...", LOG_DETAIL_MAX, detail);
        detail = cut;
    }
    fprintf(stderr, "ember kernel: ");
    fprintf(stderr, fmt, detail);
    fputc('\n', stderr);
    fflush(stderr);
}

/* ---- the connection file -------------------------------------------------- */

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1) break;
        cap *= 2;
        char *b = realloc(buf, cap);
        if (!b) free(buf);
        buf = b;
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

static int json_port(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) && v->valuedouble > 0 && v->valuedouble < 65536 ? (int)v->valuedouble : -1;
}

static const char *json_string(const cJSON *o, const char *name, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

int ekw_read_connection(const char *path, ekw_connection *c)
{
    memset(c, 0, sizeof *c);
    char *text = read_file(path);
    if (!text) {
        ekw_log("cannot read the connection file %s", path);
        return -1;
    }
    cJSON *o = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsObject(o)) {
        ekw_log("the connection file %s is not a JSON object", path);
        cJSON_Delete(o);
        return -1;
    }
    const char *transport = json_string(o, "transport", "tcp");
    const char *ip = json_string(o, "ip", "127.0.0.1");
    const char *scheme = json_string(o, "signature_scheme", "hmac-sha256");
    const char *key = json_string(o, "key", "");
    static const char *const names[EKW_NSOCKETS] = {"shell_port", "control_port", "iopub_port",
                                                    "stdin_port", "hb_port"};
    int rc = 0;
    for (int i = 0; i < EKW_NSOCKETS && rc == 0; i++) {
        int port = json_port(o, names[i]);
        if (port < 0) {
            ekw_log("the connection file has no valid %s", names[i]);
            rc = -1;
        } else if (strcmp(transport, "ipc") == 0) {
            snprintf(c->endpoint[i], sizeof c->endpoint[i], "ipc://%s-%d", ip, port);
        } else {
            snprintf(c->endpoint[i], sizeof c->endpoint[i], "%s://%s:%d", transport, ip, port);
        }
    }
    if (rc == 0 && key[0] != '\0') {
        if (strncmp(scheme, "hmac-", 5) != 0 || !(c->digest = EVP_get_digestbyname(scheme + 5))) {
            ekw_log("unsupported signature_scheme %s", scheme);
            rc = -1;
        }
    }
    if (rc == 0) {
        c->key = strdup(key);
        c->key_len = strlen(key);
        if (!c->key) rc = -1;
    }
    cJSON_Delete(o);
    return rc;
}

void ekw_free_connection(ekw_connection *c)
{
    free(c->key);
    c->key = NULL;
}

/* ---- signing -------------------------------------------------------------- */

/* Hex HMAC of the parts into hex (at least 2 * EVP_MAX_MD_SIZE + 1 bytes);
 * "" with no key. */
static int sign(const ekw_connection *c, const char *const parts[4], const size_t lens[4], char *hex)
{
    hex[0] = '\0';
    if (c->key_len == 0) return 0;
    size_t total = lens[0] + lens[1] + lens[2] + lens[3];
    unsigned char *buf = malloc(total ? total : 1);
    if (!buf) return -1;
    size_t at = 0;
    for (int i = 0; i < 4; i++) {
        memcpy(buf + at, parts[i], lens[i]);
        at += lens[i];
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    unsigned char *ok = HMAC(c->digest, c->key, (int)c->key_len, buf, total, md, &mdlen);
    free(buf);
    if (!ok) return -1;
    for (unsigned int i = 0; i < mdlen; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return 0;
}

/* ---- ids and dates -------------------------------------------------------- */

void ekw_uuid(char out[37])
{
    unsigned char b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        /* no entropy source: ids need only be unique, not secret */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        for (int i = 0; i < 16; i++) b[i] = (unsigned char)((ts.tv_nsec >> (i % 4 * 8)) ^ (i * 131) ^ rand());
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);   /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static void iso_now(char out[40])
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char base[24];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 40, "%s.%06ldZ", base, (long)tv.tv_usec);
}

/* ---- text ----------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid,
 * -1 if it is cut short by the end. Valid as strict decoders (Python's)
 * take it: no overlong forms, no surrogates (U+D800..DFFF), nothing past
 * U+10FFFF; the second byte's range is what rules those out. */
static int utf8_seq(const unsigned char *s, size_t n)
{
    int len = s[0] < 0x80 ? 1 : (s[0] >> 5) == 6 ? 2 : (s[0] >> 4) == 14 ? 3 : (s[0] >> 3) == 30 ? 4 : 0;
    if (len == 0 || (len == 2 && s[0] < 0xc2) || (len == 4 && s[0] > 0xf4)) return 0;
    unsigned char lo = s[0] == 0xe0 ? 0xa0 : s[0] == 0xf0 ? 0x90 : 0x80;
    unsigned char hi = s[0] == 0xed ? 0x9f : s[0] == 0xf4 ? 0x8f : 0xbf;
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n) return -1;
        if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf)) return 0;
    }
    return len;
}

char *ekw_utf8_clean(const char *s, size_t n, size_t *used)
{
    char *out = malloc(3 * n + 1);   /* every bad byte may become U+FFFD */
    if (!out) return NULL;
    size_t i = 0, k = 0;
    while (i < n) {
        int len = utf8_seq((const unsigned char *)s + i, n - i);
        if (len < 0 && used) break;   /* the rest comes with the next read */
        if (len <= 0) {
            memcpy(out + k, "\xef\xbf\xbd", 3);
            k += 3;
            i++;
            continue;
        }
        memcpy(out + k, s + i, (size_t)len);
        k += (size_t)len;
        i += (size_t)len;
    }
    out[k] = '\0';
    if (used) *used = i;
    return out;
}

size_t ekw_utf8_offset(const char *s, long chars)
{
    size_t i = 0;
    for (long c = 0; c < chars && s[i]; c++) {
        i++;
        while ((s[i] & 0xc0) == 0x80) i++;
    }
    return i;
}

long ekw_utf8_chars(const char *s, size_t bytes)
{
    long c = 0;
    for (size_t i = 0; i < bytes && s[i]; i++)
        if ((s[i] & 0xc0) != 0x80) c++;
    return c;
}

/* ---- receiving ------------------------------------------------------------ */

void ekw_msg_free(ekw_msg *m)
{
    for (int i = 0; i < m->nidents; i++) zmq_msg_close(&m->idents[i]);
    free(m->idents);
    cJSON_Delete(m->header);
    cJSON_Delete(m->parent);
    cJSON_Delete(m->metadata);
    cJSON_Delete(m->content);
    memset(m, 0, sizeof *m);
}

/* Does the JSON text s[0..n) hold a NUL character: a \u0000 escape, or a
 * raw NUL byte (cJSON copies those into strings too)? Backslashes appear
 * only inside strings, each starting an escape; "\\u0000" is an escaped
 * backslash, then the letters u0000. */
static bool json_has_nul(const char *s, size_t n)
{
    if (memchr(s, '\0', n)) return true;
    for (size_t i = 0; i + 1 < n; i++) {
        if (s[i] != '\\') continue;
        if (s[i + 1] == 'u' && n - i >= 6 && memcmp(s + i + 2, "0000", 4) == 0) return true;
        i++;   /* the escaped character */
    }
    return false;
}

/* *s (a string cJSON allocated) as valid UTF-8: replaced by its cleaned
 * copy when it is not. false when out of memory. */
static bool clean_string(char **s)
{
    if (!*s) return true;
    char *clean = ekw_utf8_clean(*s, strlen(*s), NULL);
    if (!clean) return false;
    if (strcmp(clean, *s) == 0) {
        free(clean);
    } else {
        cJSON_free(*s);   /* cJSON's default allocator: malloc and free, as ekw_utf8_clean's */
        *s = clean;
    }
    return true;
}

/* Every key and string value in the tree o, cleaned (cJSON limits the
 * nesting, so the recursion is bounded). */
static bool clean_strings(cJSON *o)
{
    for (cJSON *c = o; c; c = c->next) {
        if (!clean_string(&c->string)) return false;
        if (cJSON_IsString(c) && !clean_string(&c->valuestring)) return false;
        if (c->child && !clean_strings(c->child)) return false;
    }
    return true;
}

/* Parses frame f as a JSON object, its strings cleaned ({} if it is not
 * one, or holds a NUL: *bad says which, to follow "the content frame"). */
static cJSON *parse_object(zmq_msg_t *f, const char **bad)
{
    const char *text = zmq_msg_data(f);
    size_t n = zmq_msg_size(f);
    if (json_has_nul(text, n)) {
        *bad = "holds a NUL character (\\u0000): refused, rather than cut short at it";
        return cJSON_CreateObject();
    }
    cJSON *o = cJSON_ParseWithLength(text, n);
    if (cJSON_IsObject(o) && clean_strings(o->child)) return o;
    *bad = cJSON_IsObject(o) ? "cannot be read: out of memory" : "is not a JSON object";
    cJSON_Delete(o);
    return cJSON_CreateObject();
}

static bool frame_is(zmq_msg_t *f, const char *s)
{
    return zmq_msg_size(f) == strlen(s) && memcmp(zmq_msg_data(f), s, strlen(s)) == 0;
}

int ekw_recv(void *sock, const ekw_connection *c, ekw_msg *m)
{
    memset(m, 0, sizeof *m);
    zmq_msg_t frames[64];
    int n = 0, more = 1, rc = -1;
    while (more) {
        zmq_msg_t f;
        zmq_msg_init(&f);
        if (zmq_msg_recv(&f, sock, 0) < 0) {
            zmq_msg_close(&f);
            if (zmq_errno() == ETERM) rc = -2;
            goto out;
        }
        more = zmq_msg_more(&f);
        if (n < 64) frames[n++] = f;
        else zmq_msg_close(&f);   /* extra buffers: not used */
    }
    int d = 0;
    while (d < n && !frame_is(&frames[d], DELIM)) d++;
    if (d + 5 >= n) {
        ekw_log("dropped a message without the <IDS|MSG> frames%s", NULL);
        goto out;
    }
    const char *parts[4];
    size_t lens[4];
    for (int i = 0; i < 4; i++) {
        parts[i] = zmq_msg_data(&frames[d + 2 + i]);
        lens[i] = zmq_msg_size(&frames[d + 2 + i]);
    }
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    if (sign(c, parts, lens, hex) != 0) goto out;
    size_t siglen = zmq_msg_size(&frames[d + 1]);
    if (siglen != strlen(hex) || CRYPTO_memcmp(hex, zmq_msg_data(&frames[d + 1]), siglen) != 0) {
        ekw_log("dropped a message with a bad signature%s", NULL);
        goto out;
    }
    const char *bad_header = NULL;
    m->header = parse_object(&frames[d + 2], &bad_header);
    m->msg_type = json_string(m->header, "msg_type", NULL);
    if (bad_header || !m->msg_type) {
        ekw_log("dropped a message whose header %s", bad_header ? bad_header : "has no msg_type");
        goto out;
    }
    const char *bad = NULL;   /* neither is used */
    m->parent = parse_object(&frames[d + 3], &bad);
    m->metadata = parse_object(&frames[d + 4], &bad);
    m->content = parse_object(&frames[d + 5], &m->bad_content);
    m->idents = malloc((size_t)(d ? d : 1) * sizeof *m->idents);
    if (!m->idents) goto out;
    for (int i = 0; i < d; i++) {
        zmq_msg_init(&m->idents[i]);
        zmq_msg_move(&m->idents[i], &frames[i]);
    }
    m->nidents = d;
    rc = 0;
out:
    for (int i = 0; i < n; i++) zmq_msg_close(&frames[i]);
    if (rc != 0) ekw_msg_free(m);
    return rc;
}

/* ---- sending -------------------------------------------------------------- */

static int send_frame(void *sock, const void *data, size_t n, bool more)
{
    return zmq_send(sock, data, n, more ? ZMQ_SNDMORE : 0) < 0 ? -1 : 0;
}

int ekw_send(void *sock, const ekw_connection *c, const char *session, const ekw_msg *parent,
             const char *topic, const char *msg_type, cJSON *content)
{
    char id[37], date[40];
    ekw_uuid(id);
    iso_now(date);
    cJSON *header = cJSON_CreateObject();
    cJSON_AddStringToObject(header, "msg_id", id);
    cJSON_AddStringToObject(header, "session", session);
    cJSON_AddStringToObject(header, "username", "kernel");
    cJSON_AddStringToObject(header, "date", date);
    cJSON_AddStringToObject(header, "msg_type", msg_type);
    cJSON_AddStringToObject(header, "version", "5.3");
    char *parts[4] = {
        cJSON_PrintUnformatted(header),
        parent && parent->header ? cJSON_PrintUnformatted(parent->header) : strdup("{}"),
        strdup("{}"),
        content ? cJSON_PrintUnformatted(content) : strdup("{}"),
    };
    cJSON_Delete(header);
    int rc = -1;
    size_t lens[4];
    for (int i = 0; i < 4; i++) {
        if (!parts[i]) goto out;
        lens[i] = strlen(parts[i]);
    }
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    if (sign(c, (const char *const *)parts, lens, hex) != 0) goto out;
    rc = 0;
    if (topic) {
        rc |= send_frame(sock, topic, strlen(topic), true);
    } else if (parent) {
        for (int i = 0; i < parent->nidents; i++)
            rc |= send_frame(sock, zmq_msg_data((zmq_msg_t *)&parent->idents[i]),
                             zmq_msg_size((zmq_msg_t *)&parent->idents[i]), true);
    }
    rc |= send_frame(sock, DELIM, strlen(DELIM), true);
    rc |= send_frame(sock, hex, strlen(hex), true);
    for (int i = 0; i < 4; i++) rc |= send_frame(sock, parts[i], lens[i], i < 3);
out:
    for (int i = 0; i < 4; i++) cJSON_free(parts[i]);
    return rc;
}

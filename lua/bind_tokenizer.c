/* bind_tokenizer.c — the C half of ember.hf.tokenizer (lua/ember/hf/tokenizer.lua): the
 * loops that run once per character or per word of the text, which would be slow in Lua.
 *
 *   ember._tokenizer_json(text)            JSON (cJSON) as Lua tables; null is absent
 *   ember._tokenizer_model(spec)           a BPE or WordPiece model (userdata) with
 *       model:encode(text, steps, out, n, base) -> n   pre-tokenizes text with the steps
 *           (a list of {kind = "split" | "bytelevel" | "bert" | "whitespace_split", ...})
 *           and appends each token's id + base to the Lua list out after position n
 *   ember._tokenizer_pretokenize(text, steps)  the pieces the steps make of text
 *   ember._tokenizer_normalize(text, op)   "nfd", "nfc", "lowercase", "strip_accents" (drop
 *                                          Mn), "bert_clean", "bert_chinese"
 *   ember._tokenizer_utf8_lossy(s)         s with each invalid UTF-8 sequence replaced by
 *                                          U+FFFD, as Rust's String::from_utf8_lossy
 *   ember._tokenizer_bytelevel_decode(tokens)  the ByteLevel decoder's bytes of a token list
 *   ember._tokenizer_unicode_version()     the Unicode version of lua/unicode_tables.h
 *   ember._tokenizer_is_word(char)         regex's \w, roughly: a letter, number or Mn
 *
 * The pre-tokenizer patterns are not a regex engine: the three patterns GPT-2, Llama-3 and
 * Qwen2 tokenizers use are matched by hand (match_gpt2, match_llama3), with the leftmost-first
 * alternation and backtracking a regex engine gives them. */
#include "binding.h"
#include "unicode_tables.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* ---- growable byte buffers ------------------------------------------------------------ */

typedef struct { char *p; size_t n, cap; } buf;

/* Out of memory: a Lua error in the running call (the state each entry point
 * notes; what that call had allocated is lost), never an abort. */
static lua_State *running_L;
static void oom(void)
{
    if (running_L) luaL_error(running_L, "ember.hf.tokenizer: out of memory");
    abort();    /* no Lua call is running: cannot happen */
}

/* The array p of *cap elements of `size` bytes, reallocated to twice as many
 * (`first` when empty); raises on out of memory. */
static void *grow(void *p, size_t *cap, size_t size, size_t first)
{
    size_t n = *cap ? *cap * 2 : first;
    p = realloc(p, n * size);
    if (!p) oom();
    *cap = n;
    return p;
}

static void buf_reserve(buf *b, size_t extra)
{
    if (b->n + extra <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + extra) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) oom();
    b->p = p;
    b->cap = cap;
}
static void buf_add(buf *b, const char *s, size_t n) { if (!n) return; buf_reserve(b, n); memcpy(b->p + b->n, s, n); b->n += n; }
static void buf_addc(buf *b, char c) { buf_reserve(b, 1); b->p[b->n++] = c; }

/* ---- UTF-8 ------------------------------------------------------------------------------ */

/* the length of the valid UTF-8 sequence at s (at most n bytes), 0 when invalid; *cp gets
 * the code point */
static int utf8_valid(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned c = s[0];
    if (c < 0x80) { *cp = c; return 1; }
    if (c < 0xC2 || c > 0xF4) return 0;
    int len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    uint32_t v = c & (0x7F >> len);
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n) return 0;
        unsigned d = s[i];
        unsigned lo = 0x80, hi = 0xBF;
        if (i == 1) {
            if (c == 0xE0) lo = 0xA0;
            else if (c == 0xED) hi = 0x9F;
            else if (c == 0xF0) lo = 0x90;
            else if (c == 0xF4) hi = 0x8F;
        }
        if (d < lo || d > hi) return 0;
        v = (v << 6) | (d & 0x3F);
    }
    *cp = v;
    return len;
}

/* how many bytes an invalid sequence at s replaces with one U+FFFD: the maximal subpart of
 * a valid sequence (at least 1), the rule of Rust's from_utf8_lossy and Python's "replace" */
static int utf8_bad_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0xC2 || c > 0xF4) return 1;
    int len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    int i = 1;
    for (; i < len && (size_t)i < n; i++) {
        unsigned d = s[i], lo = 0x80, hi = 0xBF;
        if (i == 1) {
            if (c == 0xE0) lo = 0xA0;
            else if (c == 0xED) hi = 0x9F;
            else if (c == 0xF0) lo = 0x90;
            else if (c == 0xF4) hi = 0x8F;
        }
        if (d < lo || d > hi) break;
    }
    return i;
}

/* decodes the (valid) UTF-8 at s[*i]; advances *i */
static uint32_t utf8_next(const char *s, size_t n, size_t *i)
{
    uint32_t cp;
    int len = utf8_valid((const unsigned char *)s + *i, n - *i, &cp);
    if (len == 0) { cp = 0xFFFD; len = 1; }
    *i += (size_t)len;
    return cp;
}

static void utf8_put(buf *b, uint32_t cp)
{
    char t[4];
    int n = 0;
    if (cp < 0x80) t[n++] = (char)cp;
    else if (cp < 0x800) { t[n++] = (char)(0xC0 | cp >> 6); t[n++] = (char)(0x80 | (cp & 0x3F)); }
    else if (cp < 0x10000) {
        t[n++] = (char)(0xE0 | cp >> 12); t[n++] = (char)(0x80 | ((cp >> 6) & 0x3F)); t[n++] = (char)(0x80 | (cp & 0x3F));
    } else {
        t[n++] = (char)(0xF0 | cp >> 18); t[n++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        t[n++] = (char)(0x80 | ((cp >> 6) & 0x3F)); t[n++] = (char)(0x80 | (cp & 0x3F));
    }
    buf_add(b, t, (size_t)n);
}

static void utf8_lossy(buf *out, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        int len = utf8_valid((const unsigned char *)s + i, n - i, &cp);
        if (len) { buf_add(out, s + i, (size_t)len); i += (size_t)len; }
        else { buf_add(out, "\xEF\xBF\xBD", 3); i += (size_t)utf8_bad_len((const unsigned char *)s + i, n - i); }
    }
}

/* ---- character classes ------------------------------------------------------------------ */

enum { C_LETTER = 1, C_NUMBER = 2, C_SPACE = 4, C_MN = 8, C_PUNCT = 16, C_OTHER = 32 };

static int in_ranges(const uint32_t (*r)[2], int n, uint32_t cp)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < r[mid][0]) hi = mid - 1;
        else if (cp > r[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}

static unsigned char bmp_class[0x10000];
static int bmp_ready;

static unsigned classify_slow(uint32_t cp)
{
    unsigned f = 0;
    if (in_ranges(uni_letter, UNI_LETTER_N, cp)) f |= C_LETTER;
    if (in_ranges(uni_number, UNI_NUMBER_N, cp)) f |= C_NUMBER;
    if (in_ranges(uni_white_space, UNI_WHITE_SPACE_N, cp)) f |= C_SPACE;
    if (in_ranges(uni_mark_nonspacing, UNI_MARK_NONSPACING_N, cp)) f |= C_MN;
    if (in_ranges(uni_punct, UNI_PUNCT_N, cp)) f |= C_PUNCT;
    if (in_ranges(uni_other, UNI_OTHER_N, cp)) f |= C_OTHER;
    return f;
}

static void classes_init(void)
{
    if (bmp_ready) return;
    for (uint32_t cp = 0; cp < 0x10000; cp++) bmp_class[cp] = (unsigned char)classify_slow(cp);
    bmp_ready = 1;
}

static unsigned cls(uint32_t cp) { return cp < 0x10000 ? bmp_class[cp] : cp < 0x110000 ? classify_slow(cp) : C_OTHER; }

/* ---- the pre-tokenizer patterns ----------------------------------------------------------- */

/* the text as code points with their byte offsets: off[i] is where cp[i] starts, off[n] the end */
typedef struct { uint32_t *cp; size_t *off; size_t n; } ustr;

static void ustr_of(ustr *u, const char *s, size_t len)
{
    u->cp = malloc((len + 1) * sizeof *u->cp);
    u->off = malloc((len + 1) * sizeof *u->off);
    if (!u->cp || !u->off) oom();
    size_t i = 0, k = 0;
    while (i < len) { u->off[k] = i; u->cp[k++] = utf8_next(s, len, &i); }
    u->off[k] = len;
    u->n = k;
}
static void ustr_free(ustr *u) { free(u->cp); free(u->off); }

static int is_L(uint32_t c) { return cls(c) & C_LETTER; }
static int is_N(uint32_t c) { return cls(c) & C_NUMBER; }
static int is_S(uint32_t c) { return cls(c) & C_SPACE; }
static int is_rest(uint32_t c) { return !(cls(c) & (C_LETTER | C_NUMBER | C_SPACE)); }   /* [^\s\p{L}\p{N}] */
static int is_nl(uint32_t c) { return c == '\r' || c == '\n'; }

static size_t run(const ustr *u, size_t i, int (*pred)(uint32_t))
{
    while (i < u->n && pred(u->cp[i])) i++;
    return i;
}

/* \s+(?!\S)|\s+ at i (a whitespace character): the run, less its last character when a
 * non-space follows it and it is longer than one */
static size_t space_tail(const ustr *u, size_t i)
{
    size_t j = run(u, i, is_S);
    if (j < u->n && j - i > 1) return j - 1;
    return j;
}

/* the contractions 's 't 're 've 'm 'll 'd at i (u->cp[i] == '\''); icase: (?i:...), where
 * the long s U+017F and the Kelvin sign fold too, as in Unicode case folding */
static size_t contraction(const ustr *u, size_t i, int icase)
{
    if (i + 1 >= u->n) return 0;
    uint32_t a = u->cp[i + 1], b = i + 2 < u->n ? u->cp[i + 2] : 0;
    if (icase) {
        if (a == 0x17F) a = 's';
        if (a >= 'A' && a <= 'Z') a += 32;
        if (b < 128 && b >= 'A' && b <= 'Z') b += 32;
    }
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    return 0;
}

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * returns the end of the match at i (always > i) */
static size_t match_gpt2(const ustr *u, size_t i)
{
    uint32_t c = u->cp[i];
    if (c == '\'') { size_t e = contraction(u, i, 0); if (e) return e; }
    size_t k = (c == ' ' && i + 1 < u->n) ? i + 1 : i;
    uint32_t d = u->cp[k];
    if (is_L(d)) return run(u, k, is_L);
    if (is_N(d)) return run(u, k, is_N);
    if (is_rest(d)) return run(u, k, is_rest);
    return space_tail(u, i);
}

/* Llama-3 (maxdigits 3) and Qwen2 (maxdigits 1):
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t match_llama3(const ustr *u, size_t i, size_t maxdigits)
{
    uint32_t c = u->cp[i];
    if (c == '\'') { size_t e = contraction(u, i, 1); if (e) return e; }
    if (is_L(c)) return run(u, i, is_L);
    if (!is_nl(c) && !is_N(c) && i + 1 < u->n && is_L(u->cp[i + 1])) return run(u, i + 1, is_L);
    if (is_N(c)) {
        size_t j = i;
        while (j < u->n && j - i < maxdigits && is_N(u->cp[j])) j++;
        return j;
    }
    size_t k = (c == ' ' && i + 1 < u->n && is_rest(u->cp[i + 1])) ? i + 1 : i;
    if (is_rest(u->cp[k])) return run(u, run(u, k, is_rest), is_nl);
    /* c is whitespace: \s*[\r\n]+ ends after the run's last newline */
    size_t j = run(u, i, is_S), last = (size_t)-1;
    for (size_t t = i; t < j; t++) if (is_nl(u->cp[t])) last = t;
    if (last != (size_t)-1) return last + 1;
    return space_tail(u, i);
}

/* ---- pieces and the pre-tokenizer steps --------------------------------------------------- */

typedef struct { size_t off, len; } piece;
typedef struct { buf text; piece *p; size_t n, cap; } pieces;

static void pieces_add(pieces *ps, size_t off, size_t len)
{
    if (len == 0) return;   /* tokenizers keeps no empty split */
    if (ps->n == ps->cap) ps->p = grow(ps->p, &ps->cap, sizeof *ps->p, 64);
    ps->p[ps->n].off = off;
    ps->p[ps->n++].len = len;
}
static void pieces_free(pieces *ps) { free(ps->text.p); free(ps->p); }

enum { PAT_GPT2, PAT_LLAMA3, PAT_QWEN2 };
enum { B_ISOLATED, B_REMOVED, B_MERGED_PREV, B_MERGED_NEXT, B_CONTIGUOUS };

/* splits piece s into the pattern's matches; every character belongs to some match of
 * these patterns, so the behaviour decides only about the matches themselves (invert: the
 * matches are the delimiters... of which there are then none kept but the gaps, empty) */
static void split_pattern(pieces *out, const char *base, size_t off, size_t len, int pat, int behavior)
{
    ustr u;
    ustr_of(&u, base + off, len);
    size_t i = 0;
    size_t pending_off = 0, pending_len = 0;   /* merged_with_next / contiguous carry */
    while (i < u.n) {
        size_t j = pat == PAT_GPT2 ? match_gpt2(&u, i) : match_llama3(&u, i, pat == PAT_LLAMA3 ? 3 : 1);
        size_t a = u.off[i], b = u.off[j];
        switch (behavior) {
        case B_ISOLATED: pieces_add(out, off + a, b - a); break;
        case B_REMOVED: break;
        default: /* every character is matched: merging joins all matches into one piece */
            if (pending_len == 0) pending_off = off + a;
            pending_len = off + b - pending_off;
        }
        i = j;
    }
    if (pending_len) pieces_add(out, pending_off, pending_len);
    ustr_free(&u);
}

static int bert_punct(uint32_t c)
{
    if (c < 128) return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
    return (cls(c) & C_PUNCT) != 0;
}

/* BertPreTokenizer (punct = 1): whitespace removed, punctuation isolated;
 * WhitespaceSplit (punct = 0): whitespace removed */
static void split_bert(pieces *out, const char *base, size_t off, size_t len, int punct)
{
    size_t i = 0, start = 0;
    while (i < len) {
        size_t at = i;
        uint32_t c = utf8_next(base + off, len, &i);
        if (is_S(c)) { pieces_add(out, off + start, at - start); start = i; }
        else if (punct && bert_punct(c)) { pieces_add(out, off + start, at - start); pieces_add(out, off + at, i - at); start = i; }
    }
    pieces_add(out, off + start, len - start);
}

/* bytes_to_unicode: the printable bytes stand for themselves, the others for 256 + k */
static uint32_t byte_char[256];
static int byte_char_ready;
static void byte_chars_init(void)
{
    if (byte_char_ready) return;
    int k = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        byte_char[b] = printable ? (uint32_t)b : (uint32_t)(256 + k++);
    }
    byte_char_ready = 1;
}

typedef struct {
    int kind;   /* 0 split, 1 bytelevel, 2 bert, 3 whitespace_split, 4 metaspace */
    int pattern, behavior;
    int add_prefix_space, use_regex;
    const char *rep;        /* metaspace: the replacement (a Lua string the steps table holds) */
    size_t rep_len;
    int prepend, split;     /* metaspace: 0 never, 1 always, 2 first; split at each replacement */
} step;

/* Metaspace: spaces become the replacement, which is prepended (always, or to the first piece
 * of a text that starts here) when the piece does not start with it; with split, a piece
 * starts at each replacement (tokenizers' MergedWithNext) */
static void run_metaspace(const step *st, const pieces *in, pieces *out, int at_start)
{
    for (size_t k = 0; k < in->n; k++) {
        const char *s = in->text.p + in->p[k].off;
        size_t n = in->p[k].len, start = out->text.n;
        int has = n >= st->rep_len && memcmp(s, st->rep, st->rep_len) == 0;
        if (!has && s[0] == ' ') has = 1;
        if (!has && (st->prepend == 1 || (st->prepend == 2 && at_start && k == 0))) buf_add(&out->text, st->rep, st->rep_len);
        for (size_t i = 0; i < n; i++) {
            if (s[i] == ' ') buf_add(&out->text, st->rep, st->rep_len);
            else buf_addc(&out->text, s[i]);
        }
        size_t end = out->text.n, from = start;
        if (st->split) {
            for (size_t i = start + 1; i + st->rep_len <= end; i++)
                if (memcmp(out->text.p + i, st->rep, st->rep_len) == 0) { pieces_add(out, from, i - from); from = i; }
        }
        pieces_add(out, from, end - from);
    }
}

/* one step over every piece: a new pieces set */
static void run_step(const step *st, const pieces *in, pieces *out, int at_start)
{
    if (st->kind == 4) { run_metaspace(st, in, out, at_start); return; }
    if (st->kind == 1) {
        /* ByteLevel: a prefix space where asked, the GPT-2 split, then each byte as its character */
        for (size_t k = 0; k < in->n; k++) {
            buf tmp = {0};
            const char *s = in->text.p + in->p[k].off;
            size_t n = in->p[k].len;
            if (st->add_prefix_space && !(n > 0 && s[0] == ' ')) buf_addc(&tmp, ' ');
            buf_add(&tmp, s, n);
            pieces parts = {0};
            if (st->use_regex) split_pattern(&parts, tmp.p, 0, tmp.n, PAT_GPT2, B_ISOLATED);
            else pieces_add(&parts, 0, tmp.n);
            for (size_t q = 0; q < parts.n; q++) {
                size_t start = out->text.n;
                for (size_t t = 0; t < parts.p[q].len; t++)
                    utf8_put(&out->text, byte_char[(unsigned char)tmp.p[parts.p[q].off + t]]);
                pieces_add(out, start, out->text.n - start);
            }
            free(parts.p);
            free(tmp.p);
        }
        return;
    }
    buf_add(&out->text, in->text.p, in->text.n);
    for (size_t k = 0; k < in->n; k++) {
        if (st->kind == 0) split_pattern(out, out->text.p, in->p[k].off, in->p[k].len, st->pattern, st->behavior);
        else split_bert(out, out->text.p, in->p[k].off, in->p[k].len, st->kind == 2);
    }
}

/* ---- string -> id hash table -------------------------------------------------------------- */

typedef struct { uint32_t off, len; int32_t id; } hslot;
typedef struct { hslot *s; size_t cap, n; buf keys; } strmap;

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ull; }
    return h;
}

static int32_t strmap_get(const strmap *m, const char *s, size_t n)
{
    if (!m->cap) return -1;
    size_t i = fnv(s, n) & (m->cap - 1);
    while (m->s[i].id >= 0) {
        if (m->s[i].len == n && memcmp(m->keys.p + m->s[i].off, s, n) == 0) return m->s[i].id;
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}

static void strmap_put(strmap *m, const char *s, size_t n, int32_t id);
static void strmap_grow(strmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 1024;
    hslot *old = m->s;
    size_t ocap = m->cap;
    m->s = malloc(ncap * sizeof *m->s);
    if (!m->s) oom();
    for (size_t i = 0; i < ncap; i++) m->s[i].id = -1;
    m->cap = ncap;
    for (size_t i = 0; i < ocap; i++) {
        if (old[i].id < 0) continue;
        size_t j = fnv(m->keys.p + old[i].off, old[i].len) & (ncap - 1);
        while (m->s[j].id >= 0) j = (j + 1) & (ncap - 1);
        m->s[j] = old[i];
    }
    free(old);
}

static void strmap_put(strmap *m, const char *s, size_t n, int32_t id)
{
    if ((m->n + 1) * 2 > m->cap) strmap_grow(m);
    size_t i = fnv(s, n) & (m->cap - 1);
    while (m->s[i].id >= 0) {
        if (m->s[i].len == n && memcmp(m->keys.p + m->s[i].off, s, n) == 0) { m->s[i].id = id; return; }
        i = (i + 1) & (m->cap - 1);
    }
    m->s[i].off = (uint32_t)m->keys.n;
    m->s[i].len = (uint32_t)n;
    m->s[i].id = id;
    buf_add(&m->keys, s, n);
    m->n++;
}

static void strmap_free(strmap *m) { free(m->s); free(m->keys.p); memset(m, 0, sizeof *m); }

/* ---- merges: the 8 bytes of (left id, right id) -> rank, in a strmap; the merged id by rank */

static int32_t merge_rank(const strmap *m, int32_t a, int32_t b)
{
    int32_t k[2] = {a, b};
    return strmap_get(m, (const char *)k, sizeof k);
}

/* ---- the model -------------------------------------------------------------------------- */

#define MODEL_MT "ember.tokenizer_model"
#define CACHE_MAX 100000

typedef struct {
    int wordpiece;                 /* 0: BPE, 1: WordPiece */
    strmap vocab;
    strmap merges;                 /* (a, b) -> rank */
    int32_t *merged;               /* rank -> the merged token's id */
    int32_t unk;                   /* -1: none */
    int byte_fallback, ignore_merges, fuse_unk;
    char *prefix, *suffix;         /* continuing_subword_prefix, end_of_word_suffix ("" none) */
    size_t max_chars;              /* WordPiece's max_input_chars_per_word */
    int32_t byte_ids[256];         /* byte_fallback's <0xXX> ids (-1 absent) */
    strmap cache;                  /* BPE: word -> offset of its ids in cache_ids */
    int32_t *cache_ids;
    size_t cache_n, cache_cap;
} model;

typedef struct { int32_t *v; size_t n, cap; } ids;
static void ids_add(ids *x, int32_t id)
{
    if (x->n == x->cap) x->v = grow(x->v, &x->cap, sizeof *x->v, 256);
    x->v[x->n++] = id;
}

static int32_t vocab_get(const model *m, const char *s, size_t n, const char *pre, const char *suf)
{
    if (!*pre && !*suf) return strmap_get(&m->vocab, s, n);
    buf t = {0};
    buf_add(&t, pre, strlen(pre));
    buf_add(&t, s, n);
    buf_add(&t, suf, strlen(suf));
    int32_t id = strmap_get(&m->vocab, t.p, t.n);
    free(t.p);
    return id;
}

/* BPE over one word: its characters as the first symbols, then the pair of lowest rank
 * merged (the leftmost of equal ranks) until no pair has a merge: the order of tokenizers'
 * priority queue */
static void bpe_word(const model *m, const char *s, size_t n, ids *out)
{
    if (m->ignore_merges) {
        int32_t id = strmap_get(&m->vocab, s, n);
        if (id >= 0) { ids_add(out, id); return; }
    }
    ids sym = {0};
    size_t i = 0;
    int last_unk = 0;
    while (i < n) {
        size_t at = i;
        utf8_next(s, n, &i);
        int first = at == 0, last = i == n;
        int32_t id = vocab_get(m, s + at, i - at, first ? "" : m->prefix, last ? m->suffix : "");
        if (id >= 0) { ids_add(&sym, id); last_unk = 0; continue; }
        if (m->byte_fallback) {
            int ok = 1;
            for (size_t t = at; t < i; t++) if (m->byte_ids[(unsigned char)s[t]] < 0) ok = 0;
            if (ok) {
                for (size_t t = at; t < i; t++) ids_add(&sym, m->byte_ids[(unsigned char)s[t]]);
                last_unk = 0;
                continue;
            }
        }
        if (m->unk >= 0) {
            if (!(m->fuse_unk && last_unk)) ids_add(&sym, m->unk);
            last_unk = 1;
        }
    }
    while (sym.n > 1) {
        int32_t best = -1, best_id = -1;
        size_t at = 0;
        for (size_t k = 0; k + 1 < sym.n; k++) {
            int32_t r = merge_rank(&m->merges, sym.v[k], sym.v[k + 1]);
            if (r >= 0 && (best < 0 || r < best)) { best = r; best_id = m->merged[r]; at = k; }
        }
        if (best < 0) break;
        sym.v[at] = best_id;
        memmove(sym.v + at + 1, sym.v + at + 2, (sym.n - at - 2) * sizeof *sym.v);
        sym.n--;
    }
    for (size_t k = 0; k < sym.n; k++) ids_add(out, sym.v[k]);
    free(sym.v);
}

static void bpe_word_cached(model *m, const char *s, size_t n, ids *out)
{
    int32_t at = strmap_get(&m->cache, s, n);
    if (at >= 0) {
        int32_t cnt = m->cache_ids[at];
        for (int32_t k = 0; k < cnt; k++) ids_add(out, m->cache_ids[at + 1 + k]);
        return;
    }
    size_t before = out->n;
    bpe_word(m, s, n, out);
    if (m->cache.n >= CACHE_MAX) { strmap_free(&m->cache); m->cache_n = 0; }
    size_t cnt = out->n - before;
    if (m->cache_n + cnt + 1 > m->cache_cap) {
        m->cache_cap = (m->cache_n + cnt + 1) * 2;
        m->cache_ids = realloc(m->cache_ids, m->cache_cap * sizeof *m->cache_ids);
        if (!m->cache_ids) oom();
    }
    strmap_put(&m->cache, s, n, (int32_t)m->cache_n);
    m->cache_ids[m->cache_n++] = (int32_t)cnt;
    memcpy(m->cache_ids + m->cache_n, out->v + before, cnt * sizeof *out->v);
    m->cache_n += cnt;
}

/* WordPiece: the longest prefix in the vocabulary, then the longest "##" piece of the rest,
 * ...; a word with a part no piece covers, or longer than max_chars characters, is unk */
static void wordpiece_word(const model *m, const char *s, size_t n, ids *out)
{
    size_t nchars = 0;
    for (size_t i = 0; i < n; i++) nchars += ((unsigned char)s[i] & 0xC0) != 0x80;
    if (nchars > m->max_chars) { if (m->unk >= 0) ids_add(out, m->unk); return; }
    size_t before = out->n, start = 0;
    while (start < n) {
        size_t end = n;
        int32_t found = -1;
        while (end > start) {
            found = vocab_get(m, s + start, end - start, start > 0 ? m->prefix : "", "");
            if (found >= 0) break;
            do end--; while (end > start && ((unsigned char)s[end] & 0xC0) == 0x80);
        }
        if (found < 0) { out->n = before; if (m->unk >= 0) ids_add(out, m->unk); return; }
        ids_add(out, found);
        start = end;
    }
}

static model *check_model(lua_State *L) { return luaL_checkudata(L, 1, MODEL_MT); }

static int model_gc(lua_State *L)
{
    model *m = check_model(L);
    strmap_free(&m->vocab);
    strmap_free(&m->cache);
    strmap_free(&m->merges);
    free(m->merged); m->merged = NULL;
    free(m->cache_ids); m->cache_ids = NULL;
    free(m->prefix); m->prefix = NULL;
    free(m->suffix); m->suffix = NULL;
    return 0;
}

static const char *opt_string(lua_State *L, int t, const char *k)
{
    lua_getfield(L, t, k);
    const char *s = lua_isstring(L, -1) ? lua_tostring(L, -1) : "";
    lua_pop(L, 1);
    return s;
}
static int opt_bool(lua_State *L, int t, const char *k)
{
    lua_getfield(L, t, k);
    int b = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return b;
}
static lua_Integer opt_int(lua_State *L, int t, const char *k, lua_Integer def)
{
    lua_getfield(L, t, k);
    lua_Integer v = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : def;
    lua_pop(L, 1);
    return v;
}

/* spec: {type = "BPE" | "WordPiece", vocab = {token = id}, merges = {"a b" | {a, b}, ...},
 * unk = id or nil, byte_fallback, ignore_merges, fuse_unk, prefix, suffix, max_chars}.
 * Errors name what is wrong; the Lua side adds the op's name. */
static int l_model(lua_State *L)
{
    running_L = L;
    luaL_checktype(L, 1, LUA_TTABLE);
    model *m = lua_newuserdatauv(L, sizeof *m, 0);
    memset(m, 0, sizeof *m);
    luaL_setmetatable(L, MODEL_MT);
    int ud = lua_gettop(L);
    m->wordpiece = strcmp(opt_string(L, 1, "type"), "WordPiece") == 0;
    m->unk = (int32_t)opt_int(L, 1, "unk", -1);
    m->byte_fallback = opt_bool(L, 1, "byte_fallback");
    m->ignore_merges = opt_bool(L, 1, "ignore_merges");
    m->fuse_unk = opt_bool(L, 1, "fuse_unk");
    m->prefix = strdup(opt_string(L, 1, "prefix"));
    m->suffix = strdup(opt_string(L, 1, "suffix"));
    m->max_chars = (size_t)opt_int(L, 1, "max_chars", 100);
    lua_getfield(L, 1, "vocab");
    if (!lua_istable(L, -1)) return luaL_error(L, "model.vocab must be an object of token: id");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (lua_type(L, -2) != LUA_TSTRING || !lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0 ||
            lua_tointeger(L, -1) > INT32_MAX)
            return luaL_error(L, "model.vocab: entry '%s' is not a token with a non-negative integer id",
                              lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?");
        size_t n;
        const char *s = lua_tolstring(L, -2, &n);
        strmap_put(&m->vocab, s, n, (int32_t)lua_tointeger(L, -1));
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    for (int b = 0; b < 256; b++) {
        char t[8];
        snprintf(t, sizeof t, "<0x%02X>", b);
        m->byte_ids[b] = strmap_get(&m->vocab, t, strlen(t));
    }
    if (!m->wordpiece) {
        lua_getfield(L, 1, "merges");
        if (!lua_isnil(L, -1) && !lua_istable(L, -1)) return luaL_error(L, "model.merges must be a list");
        lua_Integer nm = lua_isnil(L, -1) ? 0 : (lua_Integer)lua_rawlen(L, -1);
        m->merged = malloc(((size_t)nm + 1) * sizeof *m->merged);
        if (!m->merged) return luaL_error(L, "out of memory for %d merges", (int)nm);
        buf both = {0};
        for (lua_Integer k = 1; k <= nm; k++) {
            lua_rawgeti(L, -1, k);
            const char *a = NULL, *b = NULL;
            size_t na = 0, nb = 0;
            if (lua_type(L, -1) == LUA_TSTRING) {
                size_t n;
                const char *s = lua_tolstring(L, -1, &n);
                const char *sp = memchr(s, ' ', n);
                if (sp && !memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s))) {
                    a = s; na = (size_t)(sp - s); b = sp + 1; nb = n - na - 1;
                }
                lua_pushnil(L);
                lua_pushnil(L);
            } else if (lua_istable(L, -1) && lua_rawlen(L, -1) == 2) {
                lua_rawgeti(L, -1, 1);
                lua_rawgeti(L, -2, 2);
                if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING) {
                    a = lua_tolstring(L, -2, &na);
                    b = lua_tolstring(L, -1, &nb);
                }
            } else {
                lua_pushnil(L);
                lua_pushnil(L);
            }
            if (!a) { free(both.p); return luaL_error(L, "model.merges[%d] is not \"a b\" or [a, b]", (int)k); }
            int32_t ia = strmap_get(&m->vocab, a, na), ib = strmap_get(&m->vocab, b, nb);
            both.n = 0;
            buf_add(&both, a, na);
            buf_add(&both, b, nb);
            int32_t ic = strmap_get(&m->vocab, both.p, both.n);
            if (ia < 0 || ib < 0 || ic < 0) {
                lua_pushlstring(L, ia < 0 ? a : ib < 0 ? b : both.p, ia < 0 ? na : ib < 0 ? nb : both.n);
                free(both.p);
                return luaL_error(L, "model.merges[%d]: token '%s' is not in the vocabulary", (int)k,
                                  lua_tostring(L, -1));
            }
            /* the first (lowest) rank of a pair listed twice wins */
            if (merge_rank(&m->merges, ia, ib) < 0) {
                int32_t key[2] = {ia, ib};
                strmap_put(&m->merges, (const char *)key, sizeof key, (int32_t)(k - 1));
            }
            m->merged[k - 1] = ic;
            lua_pop(L, 3);
        }
        free(both.p);
        lua_pop(L, 1);
    }
    lua_pushvalue(L, ud);
    return 1;
}

static int parse_steps(lua_State *L, int idx, step *st, int max)
{
    int n = (int)lua_rawlen(L, idx);
    if (n > max) return luaL_error(L, "too many pre-tokenizer steps (%d, at most %d)", n, max);
    for (int k = 0; k < n; k++) {
        lua_rawgeti(L, idx, k + 1);
        int t = lua_gettop(L);
        const char *kind = opt_string(L, t, "kind");
        memset(&st[k], 0, sizeof st[k]);
        if (!strcmp(kind, "split")) {
            st[k].kind = 0;
            const char *p = opt_string(L, t, "pattern"), *b = opt_string(L, t, "behavior");
            st[k].pattern = !strcmp(p, "gpt2") ? PAT_GPT2 : !strcmp(p, "llama3") ? PAT_LLAMA3 : PAT_QWEN2;
            st[k].behavior = !strcmp(b, "Removed") ? B_REMOVED : !strcmp(b, "Isolated") ? B_ISOLATED : B_CONTIGUOUS;
        } else if (!strcmp(kind, "bytelevel")) {
            st[k].kind = 1;
            st[k].add_prefix_space = opt_bool(L, t, "add_prefix_space");
            st[k].use_regex = opt_bool(L, t, "use_regex");
        } else if (!strcmp(kind, "bert")) st[k].kind = 2;
        else if (!strcmp(kind, "whitespace_split")) st[k].kind = 3;
        else if (!strcmp(kind, "metaspace")) {
            st[k].kind = 4;
            lua_getfield(L, t, "replacement");
            st[k].rep = lua_tolstring(L, -1, &st[k].rep_len);   /* held by the steps table */
            lua_pop(L, 1);
            if (!st[k].rep || st[k].rep_len == 0) return luaL_error(L, "metaspace step without a replacement");
            const char *ps = opt_string(L, t, "prepend_scheme");
            st[k].prepend = !strcmp(ps, "never") ? 0 : !strcmp(ps, "first") ? 2 : 1;
            st[k].split = opt_bool(L, t, "split");
        }
        else return luaL_error(L, "unknown pre-tokenizer step '%s'", kind);
        lua_pop(L, 1);
    }
    return n;
}

/* text through the steps: the pieces the model gets */
static void pretokenize(lua_State *L, const char *text, size_t len, int steps_idx, int at_start, pieces *cur)
{
    step st[16];
    int nst = parse_steps(L, steps_idx, st, 16);
    classes_init();
    byte_chars_init();
    memset(cur, 0, sizeof *cur);
    buf_add(&cur->text, text, len);
    pieces_add(cur, 0, len);
    for (int k = 0; k < nst; k++) {
        pieces next = {0};
        run_step(&st[k], cur, &next, at_start);
        pieces_free(cur);
        *cur = next;
    }
}

/* model:encode(text, steps, out, n, base, at_start) -> n; at_start: text begins the input
 * (Metaspace's prepend_scheme "first") */
static int model_encode(lua_State *L)
{
    running_L = L;
    model *m = check_model(L);
    size_t len;
    const char *text = luaL_checklstring(L, 2, &len);
    luaL_checktype(L, 3, LUA_TTABLE);
    luaL_checktype(L, 4, LUA_TTABLE);
    lua_Integer n = luaL_checkinteger(L, 5), base = luaL_checkinteger(L, 6);
    pieces cur;
    pretokenize(L, text, len, 3, lua_toboolean(L, 7), &cur);
    ids out = {0};
    for (size_t k = 0; k < cur.n; k++) {
        const char *s = cur.text.p + cur.p[k].off;
        if (m->wordpiece) wordpiece_word(m, s, cur.p[k].len, &out);
        else bpe_word_cached(m, s, cur.p[k].len, &out);
    }
    pieces_free(&cur);
    for (size_t k = 0; k < out.n; k++) {
        lua_pushinteger(L, (lua_Integer)out.v[k] + base);
        lua_rawseti(L, 4, ++n);
    }
    free(out.v);
    lua_pushinteger(L, n);
    return 1;
}

/* ember._tokenizer_pretokenize(text, steps) -> the list of pieces */
static int l_pretokenize(lua_State *L)
{
    running_L = L;
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    luaL_checktype(L, 2, LUA_TTABLE);
    pieces cur;
    pretokenize(L, text, len, 2, 1, &cur);
    lua_createtable(L, (int)cur.n, 0);
    for (size_t k = 0; k < cur.n; k++) {
        lua_pushlstring(L, cur.text.p + cur.p[k].off, cur.p[k].len);
        lua_rawseti(L, -2, (lua_Integer)k + 1);
    }
    pieces_free(&cur);
    return 1;
}

/* ---- normalizers -------------------------------------------------------------------------- */

static const uint32_t *decomp_of(uint32_t cp, int *len)
{
    int lo = 0, hi = UNI_DECOMP_N - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < uni_decomp[mid][0]) hi = mid - 1;
        else if (cp > uni_decomp[mid][0]) lo = mid + 1;
        else { *len = (int)uni_decomp[mid][2]; return uni_decomp_pool + uni_decomp[mid][1]; }
    }
    return NULL;
}

static int ccc_of(uint32_t cp)
{
    if (cp < 0x300) return 0;
    int lo = 0, hi = UNI_CCC_N - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < uni_ccc[mid][0]) hi = mid - 1;
        else if (cp > uni_ccc[mid][1]) lo = mid + 1;
        else return (int)uni_ccc[mid][2];
    }
    return 0;
}

enum { SBASE = 0xAC00, LBASE = 0x1100, VBASE = 0x1161, TBASE = 0x11A7, LCOUNT = 19, VCOUNT = 21, TCOUNT = 28,
       NCOUNT = VCOUNT * TCOUNT, SCOUNT = LCOUNT * NCOUNT };

typedef struct { uint32_t *v; size_t n, cap; } cps;
static void cps_add(cps *c, uint32_t x)
{
    if (c->n == c->cap) c->v = grow(c->v, &c->cap, sizeof *c->v, 256);
    c->v[c->n++] = x;
}

/* NFD: full canonical decomposition, then the canonical ordering of combining marks */
static void to_nfd(const char *s, size_t n, cps *out)
{
    size_t i = 0;
    while (i < n) {
        uint32_t c = utf8_next(s, n, &i);
        if (c >= SBASE && c < SBASE + SCOUNT) {
            uint32_t si = c - SBASE;
            cps_add(out, LBASE + si / NCOUNT);
            cps_add(out, VBASE + (si % NCOUNT) / TCOUNT);
            if (si % TCOUNT) cps_add(out, TBASE + si % TCOUNT);
            continue;
        }
        int len;
        const uint32_t *d = c < 0xC0 ? NULL : decomp_of(c, &len);
        if (!d) { cps_add(out, c); continue; }
        for (int k = 0; k < len; k++) cps_add(out, d[k]);
    }
    /* stable sort of each run of non-starters by class (insertion sort: runs are short) */
    for (size_t k = 1; k < out->n; k++) {
        int ck = ccc_of(out->v[k]);
        if (!ck) continue;
        size_t j = k;
        uint32_t x = out->v[k];
        while (j > 0) {
            int cj = ccc_of(out->v[j - 1]);
            if (cj <= ck) break;
            out->v[j] = out->v[j - 1];
            j--;
        }
        out->v[j] = x;
    }
}

static uint32_t compose(uint32_t a, uint32_t b)
{
    if (a >= LBASE && a < LBASE + LCOUNT && b >= VBASE && b < VBASE + VCOUNT)
        return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
    if (a >= SBASE && a < SBASE + SCOUNT && (a - SBASE) % TCOUNT == 0 && b > TBASE && b < TBASE + TCOUNT)
        return a + (b - TBASE);
    int lo = 0, hi = UNI_COMPOSE_N - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (a < uni_compose[mid][0] || (a == uni_compose[mid][0] && b < uni_compose[mid][1])) hi = mid - 1;
        else if (a > uni_compose[mid][0] || b > uni_compose[mid][1]) lo = mid + 1;
        else return uni_compose[mid][2];
    }
    return 0;
}

/* NFC: NFD, then each character composed with the last starter before it when nothing of
 * its class or of class 0 stands between them */
static void to_nfc(const char *s, size_t n, buf *out)
{
    cps d = {0};
    to_nfd(s, n, &d);
    size_t starter = (size_t)-1, w = 0;
    for (size_t k = 0; k < d.n; k++) {
        uint32_t c = d.v[k];
        int cc = ccc_of(c);
        if (starter != (size_t)-1) {
            /* blocked unless c follows the starter directly or everything between has a
               lower class than c's */
            int prev = w == starter + 1 ? -1 : ccc_of(d.v[w - 1]);
            if (prev == -1 || (prev != 0 && prev < cc)) {
                uint32_t comp = compose(d.v[starter], c);
                if (comp) { d.v[starter] = comp; continue; }
            }
        }
        if (cc == 0) starter = w;
        d.v[w++] = c;
    }
    for (size_t k = 0; k < w; k++) utf8_put(out, d.v[k]);
    free(d.v);
}

static void lower_put(buf *out, uint32_t c)
{
    if (c < 128) { buf_addc(out, (char)(c >= 'A' && c <= 'Z' ? c + 32 : c)); return; }
    for (int k = 0; k < UNI_LOWER_MULTI_N; k++)
        if (uni_lower_multi[k][0] == c) {
            for (uint32_t t = 0; t < uni_lower_multi[k][1]; t++) utf8_put(out, uni_lower_multi[k][2 + t]);
            return;
        }
    int lo = 0, hi = UNI_LOWER_N - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (c < uni_lower[mid][0]) hi = mid - 1;
        else if (c > uni_lower[mid][0]) lo = mid + 1;
        else { utf8_put(out, uni_lower[mid][1]); return; }
    }
    utf8_put(out, c);
}

static int is_cjk(uint32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static int l_normalize(lua_State *L)
{
    running_L = L;
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    const char *op = luaL_checkstring(L, 2);
    classes_init();
    buf out = {0};
    buf_reserve(&out, n + 1);
    if (!strcmp(op, "nfd") || !strcmp(op, "strip_accents_nfd")) {
        cps d = {0};
        to_nfd(s, n, &d);
        int strip = op[0] == 's';
        for (size_t k = 0; k < d.n; k++)
            if (!(strip && (cls(d.v[k]) & C_MN))) utf8_put(&out, d.v[k]);
        free(d.v);
    } else if (!strcmp(op, "nfc")) {
        to_nfc(s, n, &out);
    } else if (!strcmp(op, "lowercase")) {
        size_t i = 0;
        while (i < n) lower_put(&out, utf8_next(s, n, &i));
    } else if (!strcmp(op, "strip_accents")) {
        size_t i = 0;
        while (i < n) { uint32_t c = utf8_next(s, n, &i); if (!(cls(c) & C_MN)) utf8_put(&out, c); }
    } else if (!strcmp(op, "bert_clean")) {
        /* drop NUL, U+FFFD and the other characters (C*) except \t \n \r; whitespace to ' ' */
        size_t i = 0;
        while (i < n) {
            uint32_t c = utf8_next(s, n, &i);
            if (c == '\t' || c == '\n' || c == '\r') { buf_addc(&out, ' '); continue; }
            if (c == 0 || c == 0xFFFD || (cls(c) & C_OTHER)) continue;
            if (cls(c) & C_SPACE) buf_addc(&out, ' ');
            else utf8_put(&out, c);
        }
    } else if (!strcmp(op, "bert_chinese")) {
        size_t i = 0;
        while (i < n) {
            uint32_t c = utf8_next(s, n, &i);
            if (is_cjk(c)) { buf_addc(&out, ' '); utf8_put(&out, c); buf_addc(&out, ' '); }
            else utf8_put(&out, c);
        }
    } else {
        free(out.p);
        return luaL_error(L, "unknown normalization '%s'", op);
    }
    lua_pushlstring(L, out.p ? out.p : "", out.n);
    free(out.p);
    return 1;
}

static int l_utf8_lossy(lua_State *L)
{
    running_L = L;
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    buf out = {0};
    utf8_lossy(&out, s, n);
    lua_pushlstring(L, out.p ? out.p : "", out.n);
    free(out.p);
    return 1;
}

/* the ByteLevel decoder: each token's characters back to their bytes; a token holding a
 * character that stands for no byte is kept as its own UTF-8 bytes */
static int l_bytelevel_decode(lua_State *L)
{
    running_L = L;
    luaL_checktype(L, 1, LUA_TTABLE);
    byte_chars_init();
    static int16_t char_byte[512];
    static int inv_ready;
    if (!inv_ready) {
        for (int k = 0; k < 512; k++) char_byte[k] = -1;
        for (int b = 0; b < 256; b++) char_byte[byte_char[b]] = (int16_t)b;
        inv_ready = 1;
    }
    buf out = {0};
    lua_Integer nt = (lua_Integer)lua_rawlen(L, 1);
    for (lua_Integer k = 1; k <= nt; k++) {
        lua_rawgeti(L, 1, k);
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        if (!s) { free(out.p); return luaL_error(L, "token %d is not a string", (int)k); }
        size_t start = out.n, i = 0;
        int ok = 1;
        while (i < n) {
            uint32_t c = utf8_next(s, n, &i);
            if (c >= 512 || char_byte[c] < 0) { ok = 0; break; }
            buf_addc(&out, (char)char_byte[c]);
        }
        if (!ok) { out.n = start; buf_add(&out, s, n); }
        lua_pop(L, 1);
    }
    lua_pushlstring(L, out.p ? out.p : "", out.n);
    free(out.p);
    return 1;
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static void push_json(lua_State *L, const cJSON *v, int depth)
{
    luaL_checkstack(L, 4, "JSON nesting");
    if (cJSON_IsObject(v)) {
        lua_createtable(L, 0, 4);
        for (const cJSON *c = v->child; c; c = c->next) {
            if (cJSON_IsNull(c)) continue;
            push_json(L, c, depth + 1);
            lua_setfield(L, -2, c->string);
        }
    } else if (cJSON_IsArray(v)) {
        int n = cJSON_GetArraySize(v), k = 0;
        lua_createtable(L, n, 0);
        for (const cJSON *c = v->child; c; c = c->next) {
            k++;
            if (cJSON_IsNull(c)) continue;
            push_json(L, c, depth + 1);
            lua_rawseti(L, -2, k);
        }
    } else if (cJSON_IsString(v)) {
        lua_pushstring(L, v->valuestring);
    } else if (cJSON_IsBool(v)) {
        lua_pushboolean(L, cJSON_IsTrue(v));
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == (double)(lua_Integer)d && d >= -9007199254740992.0 && d <= 9007199254740992.0)
            lua_pushinteger(L, (lua_Integer)d);
        else lua_pushnumber(L, d);
    } else {
        lua_pushnil(L);
    }
}

static int l_json(lua_State *L)
{
    running_L = L;
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(s, n, &end, 0);
    if (!root) {
        size_t at = end && end >= s ? (size_t)(end - s) : 0;
        lua_pushnil(L);
        lua_pushfstring(L, "invalid JSON near byte %d", (int)at + 1);
        return 2;
    }
    push_json(L, root, 0);
    cJSON_Delete(root);
    return 1;
}

/* regex's \w for one non-ASCII character (single_word added tokens): a letter, number or
 * nonspacing mark */
static int l_is_word(lua_State *L)
{
    running_L = L;
    size_t n, i = 0;
    const char *s = luaL_checklstring(L, 1, &n);
    classes_init();
    lua_pushboolean(L, n > 0 && (cls(utf8_next(s, n, &i)) & (C_LETTER | C_NUMBER | C_MN)) != 0);
    return 1;
}

static int l_unicode_version(lua_State *L)
{
    running_L = L;
    lua_pushstring(L, EM_UNICODE_VERSION);
    return 1;
}

void emlua_open_tokenizer(lua_State *L)
{
    static const luaL_Reg model_methods[] = {{"encode", model_encode}, {NULL, NULL}};
    emlua_new_class(L, MODEL_MT, model_methods, model_gc, NULL, NULL);
    static const luaL_Reg functions[] = {
        {"_tokenizer_json", l_json},
        {"_tokenizer_model", l_model},
        {"_tokenizer_normalize", l_normalize},
        {"_tokenizer_utf8_lossy", l_utf8_lossy},
        {"_tokenizer_bytelevel_decode", l_bytelevel_decode},
        {"_tokenizer_unicode_version", l_unicode_version},
        {"_tokenizer_is_word", l_is_word},
        {"_tokenizer_pretokenize", l_pretokenize},
        {NULL, NULL},
    };
    emlua_register(L, NULL, functions);
}

#!/usr/bin/env python3
# gen_unicode_tables.py — writes lua/unicode_tables.h, the Unicode data the tokenizer
# (lua/bind_tokenizer.c) needs, from Python's unicodedata:
#   range tables (sorted, inclusive [lo, hi] pairs) of the general categories L*, N*, Mn,
#   P*, C* (Cc, Cf, Cs, Co and unassigned Cn), and of the White_Space property;
#   the full canonical decomposition (NFD) of every code point that has one (Hangul
#   syllables left out: the C code decomposes them by formula);
#   the canonical combining class of every code point whose class is not 0;
#   the primary composites (NFC): the pairs a b that compose to c;
#   the lowercase mapping of every code point that has one (one code point to one or more).
# The Unicode version is Python's (unicodedata.unidata_version), written into the header.
#   python3 scripts/gen_unicode_tables.py        (any Python 3; the output depends only on
#                                                 its Unicode version)
import os
import sys
import unicodedata as ud

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
OUT = os.path.join(ROOT, "lua", "unicode_tables.h")
MAXCP = 0x110000
HANGUL = range(0xAC00, 0xAC00 + 11172)

# White_Space (PropList.txt): unicodedata has no property lookup; this list has not changed
# since Unicode 6.3
WHITE_SPACE = [(0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680),
               (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F),
               (0x3000, 0x3000)]


def ranges(pred):
    out, start = [], None
    for cp in range(MAXCP):
        if pred(cp):
            if start is None: start = cp
        elif start is not None:
            out.append((start, cp - 1)); start = None
    if start is not None: out.append((start, MAXCP - 1))
    return out


def cat(cp): return ud.category(chr(cp))


def emit_ranges(lines, name, rs):
    lines.append("static const uint32_t %s[][2] = {" % name)
    for i in range(0, len(rs), 6):
        lines.append("    " + " ".join("{0x%X, 0x%X}," % r for r in rs[i:i + 6]))
    lines.append("};")
    lines.append("#define %s_N %d" % (name.upper(), len(rs)))


def nfd(cp):
    return [ord(c) for c in ud.normalize("NFD", chr(cp))]


def main():
    lines = ["/* lua/unicode_tables.h — written by scripts/gen_unicode_tables.py from Python %s's"
             % sys.version.split()[0],
             "   unicodedata, Unicode %s. Do not edit: run the script. */" % ud.unidata_version,
             "#ifndef EMBER_UNICODE_TABLES_H", "#define EMBER_UNICODE_TABLES_H", "#include <stdint.h>",
             '#define EM_UNICODE_VERSION "%s"' % ud.unidata_version]
    emit_ranges(lines, "uni_letter", ranges(lambda c: cat(c)[0] == "L"))
    emit_ranges(lines, "uni_number", ranges(lambda c: cat(c)[0] == "N"))
    emit_ranges(lines, "uni_mark_nonspacing", ranges(lambda c: cat(c) == "Mn"))
    emit_ranges(lines, "uni_punct", ranges(lambda c: cat(c)[0] == "P"))
    emit_ranges(lines, "uni_other", ranges(lambda c: cat(c)[0] == "C"))
    emit_ranges(lines, "uni_white_space", WHITE_SPACE)

    # decompositions: cp, offset into the pool, length
    pool, decomp = [], []
    for cp in range(MAXCP):
        if cp in HANGUL: continue
        d = nfd(cp)
        if d != [cp]:
            decomp.append((cp, len(pool), len(d)))
            pool.extend(d)
    lines.append("static const uint32_t uni_decomp_pool[] = {")
    for i in range(0, len(pool), 12):
        lines.append("    " + " ".join("0x%X," % x for x in pool[i:i + 12]))
    lines.append("};")
    lines.append("static const uint32_t uni_decomp[][3] = {  /* code point, offset, length */")
    for i in range(0, len(decomp), 6):
        lines.append("    " + " ".join("{0x%X, %d, %d}," % e for e in decomp[i:i + 6]))
    lines.append("};")
    lines.append("#define UNI_DECOMP_N %d" % len(decomp))

    ccc = []
    for cp in range(MAXCP):
        k = ud.combining(chr(cp))
        if k: ccc.append((cp, k))
    # runs of one class as [lo, hi, class]
    runs = []
    for cp, k in ccc:
        if runs and runs[-1][1] == cp - 1 and runs[-1][2] == k:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp, k])
    lines.append("static const uint32_t uni_ccc[][3] = {  /* lo, hi, canonical combining class */")
    for i in range(0, len(runs), 6):
        lines.append("    " + " ".join("{0x%X, 0x%X, %d}," % tuple(r) for r in runs[i:i + 6]))
    lines.append("};")
    lines.append("#define UNI_CCC_N %d" % len(runs))

    # primary composites: a canonical decomposition of two code points (first level) whose
    # result survives NFC (not a composition exclusion, not a non-starter decomposition)
    comp = []
    for cp in range(MAXCP):
        if cp in HANGUL: continue
        d = ud.decomposition(chr(cp))
        if not d or d.startswith("<"): continue
        parts = [int(x, 16) for x in d.split()]
        if len(parts) != 2: continue
        if ud.normalize("NFC", chr(parts[0]) + chr(parts[1])) == chr(cp):
            comp.append((parts[0], parts[1], cp))
    comp.sort()
    lines.append("static const uint32_t uni_compose[][3] = {  /* first, second, composite; sorted */")
    for i in range(0, len(comp), 6):
        lines.append("    " + " ".join("{0x%X, 0x%X, 0x%X}," % e for e in comp[i:i + 6]))
    lines.append("};")
    lines.append("#define UNI_COMPOSE_N %d" % len(comp))

    # lowercase, one code point at a time (as Rust's char::to_lowercase: no final-sigma rule)
    lower, multi = [], []
    for cp in range(MAXCP):
        if 0xD800 <= cp <= 0xDFFF: continue
        lo = chr(cp).lower()
        if lo != chr(cp):
            if len(lo) == 1:
                lower.append((cp, ord(lo)))
            else:
                multi.append((cp, [ord(c) for c in lo]))
    lines.append("static const uint32_t uni_lower[][2] = {  /* code point, its lowercase; sorted */")
    for i in range(0, len(lower), 6):
        lines.append("    " + " ".join("{0x%X, 0x%X}," % e for e in lower[i:i + 6]))
    lines.append("};")
    lines.append("#define UNI_LOWER_N %d" % len(lower))
    lines.append("static const uint32_t uni_lower_multi[][4] = {  /* code point, length, lowercase... */")
    for cp, lo in multi:
        assert len(lo) <= 2
        lines.append("    {0x%X, %d, %s}," % (cp, len(lo), ", ".join("0x%X" % x for x in lo + [0] * (2 - len(lo)))))
    lines.append("};")
    lines.append("#define UNI_LOWER_MULTI_N %d" % len(multi))
    lines.append("#endif")
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%s: %d bytes, Unicode %s" % (os.path.relpath(OUT, ROOT), os.path.getsize(OUT), ud.unidata_version))


if __name__ == "__main__":
    main()

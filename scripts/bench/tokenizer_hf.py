#!/usr/bin/env python3
"""scripts/bench/tokenizer_hf.py — the tokenizers library's side of scripts/bench/tokenizer.lua:
encode (no special tokens) and decode of one text, best of 3, for each tokenizer folder.
Arguments: TEXT DIR... Prints one line per folder: "<name> <encode ms> <decode ms> <ids>".
Single-threaded encode (Tokenizer.encode, not encode_batch), as ember's."""
import os
import sys
import time

from tokenizers import Tokenizer


def best(n, fn):
    t = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def main():
    text = open(sys.argv[1], "rb").read().decode("utf-8", errors="replace")
    for d in sys.argv[2:]:
        tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        box = {}
        enc = best(3, lambda: box.__setitem__("ids", tok.encode(text, add_special_tokens=False).ids))
        dec = best(3, lambda: tok.decode(box["ids"], skip_special_tokens=False))
        print("%s %.6g %.6g %d" % (os.path.basename(d.rstrip("/")), enc * 1e3, dec * 1e3, len(box["ids"])))
        sys.stdout.flush()


if __name__ == "__main__":
    main()

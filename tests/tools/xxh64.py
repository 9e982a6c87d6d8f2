#!/usr/bin/env python3
"""XXH64 in pure Python: the independent reference for base/hash.c.

Written from the algorithm as the xxHash specification describes it
(doc/xxhash_spec.md, "XXH64 Algorithm Description"), with Python's
unbounded integers masked to 64 bits, so that it shares no code and no
idiom with the C version it checks.

Usage:
  xxh64.py            reads lines "SEED HEX" (SEED decimal, HEX the input
                      bytes, possibly empty) from stdin and prints one line
                      per input: the digest as 16 lowercase hex digits
  xxh64.py --selftest checks the specification's known vectors
"""
import sys

MASK = (1 << 64) - 1
P1 = 0x9E3779B185EBCA87
P2 = 0xC2B2AE3D27D4EB4F
P3 = 0x165667B19E3779F9
P4 = 0x85EBCA77C2B2AE63
P5 = 0x27D4EB2F165667C5


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & MASK


def round_(acc, lane):
    acc = (acc + lane * P2) & MASK
    return (rotl(acc, 31) * P1) & MASK


def merge(acc, v):
    acc ^= round_(0, v)
    return (acc * P1 + P4) & MASK


def le(data, at, n):
    return int.from_bytes(data[at:at + n], "little")


def xxh64(data, seed=0):
    n = len(data)
    at = 0
    if n >= 32:
        v = [(seed + P1 + P2) & MASK, (seed + P2) & MASK, seed & MASK,
             (seed - P1) & MASK]
        while n - at >= 32:
            for k in range(4):
                v[k] = round_(v[k], le(data, at + 8 * k, 8))
            at += 32
        acc = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) +
               rotl(v[3], 18)) & MASK
        for k in range(4):
            acc = merge(acc, v[k])
    else:
        acc = (seed + P5) & MASK
    acc = (acc + n) & MASK
    while n - at >= 8:
        acc ^= round_(0, le(data, at, 8))
        acc = (rotl(acc, 27) * P1 + P4) & MASK
        at += 8
    if n - at >= 4:
        acc ^= (le(data, at, 4) * P1) & MASK
        acc = (rotl(acc, 23) * P2 + P3) & MASK
        at += 4
    while at < n:
        acc ^= (data[at] * P5) & MASK
        acc = (rotl(acc, 11) * P1) & MASK
        at += 1
    acc ^= acc >> 33
    acc = (acc * P2) & MASK
    acc ^= acc >> 29
    acc = (acc * P3) & MASK
    acc ^= acc >> 32
    return acc


KNOWN = [(b"", 0, 0xEF46DB3751D8E999), (b"a", 0, 0xD24EC4F1A98C6E5B),
         (b"abc", 0, 0x44BC2CF5AD770999)]


def main():
    if sys.argv[1:] == ["--selftest"]:
        bad = [(d, s, w) for d, s, w in KNOWN if xxh64(d, s) != w]
        for d, s, w in bad:
            print(f"xxh64.py: {d!r} seed {s}: got {xxh64(d, s):016x}, "
                  f"want {w:016x}", file=sys.stderr)
        return 1 if bad else 0
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        seed = int(parts[0])
        data = bytes.fromhex(parts[1]) if len(parts) > 1 else b""
        print(f"{xxh64(data, seed):016x}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Write ragcli/_nfc_safe.h: which characters of the Basic Multilingual Plane can stand in a string
known to be NFC (Unicode's composed form) without asking unicodedata, for ragcli/_speedups.c.

A character is safe when it is assigned (not a surrogate), has canonical combining class 0, is its own
NFC, its decomposition does not start with a character another can compose with, and no character
composes with it as the second of a pair (Hangul's vowel and trailing jamo included). A string of safe
characters is NFC: nothing in it reorders, decomposes or composes. Unicode's stability policy keeps it
so in later versions (a character once encoded keeps its class and decomposition, and new composites
are excluded from composition); characters assigned later are unsafe here, so they are checked.

    python scripts/gen_nfc_table.py   # then rebuild: pip install -e .

tests/test_speedups.py checks the table against the unicodedata of the Python running the tests.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "ragcli" / "_nfc_safe.h"


def seconds() -> set[int]:
    """Characters that compose with one before them: the second of any two-character canonical
    decomposition, and Hangul's medial vowels and trailing consonants."""
    out = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))
    for c in range(0x110000):
        d = unicodedata.decomposition(chr(c))
        if d and not d.startswith("<") and len(d.split()) == 2:
            out.add(int(d.split()[1], 16))
    return out


def safe(c: int, second: set[int]) -> bool:
    ch = chr(c)
    return (unicodedata.category(ch) not in ("Cn", "Cs") and unicodedata.combining(ch) == 0
            and unicodedata.normalize("NFC", ch) == ch and c not in second
            and ord(unicodedata.normalize("NFD", ch)[0]) not in second)


def main() -> None:
    second = seconds()
    bits = [safe(c, second) for c in range(0x10000)]
    pages, mixed = [], []
    for p in range(256):
        page = bits[p * 256:(p + 1) * 256]
        if all(page):
            pages.append(1)
        elif not any(page):
            pages.append(0)
        else:
            mixed.append(bytes(sum(1 << b for b in range(8) if page[i * 8 + b]) for i in range(32)))
            pages.append(1 + len(mixed))
    lines = [f"/* Written by scripts/gen_nfc_table.py from Unicode {unicodedata.unidata_version}: do not edit. */",
             "/* NFC_PAGE[c >> 8]: 0 none of the page is safe, 1 all of it, k > 1 the bits NFC_BITS[k - 2]. */",
             "static const unsigned char NFC_PAGE[256] = {"]
    lines += ["    " + ", ".join(str(v) for v in pages[i:i + 32]) + "," for i in range(0, 256, 32)]
    lines += ["};", f"static const unsigned char NFC_BITS[{len(mixed)}][32] = {{"]
    lines += ["    {" + ", ".join(f"0x{b:02x}" for b in m) + "}," for m in mixed]
    lines += ["};", ""]
    OUT.write_text("\n".join(lines), encoding="utf-8")
    print(f"{OUT}: {sum(bits)} safe characters, {pages.count(1)} whole pages, {len(mixed)} mixed")


if __name__ == "__main__":
    main()

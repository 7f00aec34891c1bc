"""Text safety, the ground floor every wing shares: text that came out of a sandbox, or a name a student chose (a file,
a folder, an LMS download's name), shown on a terminal, in JUnit, JSON, CSV and HTML without being interpreted, and
two names that look alike shown so that they read apart."""

from __future__ import annotations

import unicodedata

_HIDDEN = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"}  # controls, format (zero-width, bidi), surrogates, private,
# unassigned, line and paragraph separators, spaces other than " ": shown as an escape


def sanitize(text: str, most: int | None = None, *, backslash: bool = True) -> str:
    """Text that came out of a sandbox (or a file name a student chose), safe for a terminal, JUnit and JSON, and
    distinct when its input was: every control character but newline and tab (ANSI escapes, carriage returns, C1
    codes), every format character (zero-width ones, bidi overrides), separators and spaces other than " ", and
    undecodable bytes are shown as a visible escape, never interpreted; a backslash as two, so that an escape
    shown is never the student's own text. MOST: keep at most that many characters. BACKSLASH=False: the last guard
    on text sanitized already (JUnit, Gradescope): what is still unsafe is escaped, a backslash kept (escaping it
    again would show every escape twice)."""
    text = str(text)
    if most is not None and len(text) > most:
        text = text[:most] + "…"
    out = []
    for c in text:
        o = ord(c)
        if c == "\\":
            out.append("\\\\" if backslash else c)
        elif c in "\n\t" or (0x20 <= o < 0x7F) or (o >= 0xA0 and unicodedata.category(c) not in _HIDDEN):
            out.append(c)
        elif 0xDC80 <= o <= 0xDCFF:  # a byte that was not UTF-8 (os.fsdecode's surrogateescape)
            out.append(f"\\x{o - 0xDC00:02x}")
        elif o < 0x80:  # \r, \x1b
            out.append(c.encode("unicode_escape").decode("ascii"))
        else:  # \u009b: a C1 code, never to be read as the undecodable byte \x9b
            out.append(f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}")
    return "".join(out)


def looks_alike(name: str) -> str:
    """What NAME shows as, give or take case, accents and compatibility forms (ｆｕｌｌｗｉｄｔｈ, ﬁ, é as é or as
    e + ◌́): its NFKD form without combining marks, case-folded."""
    return "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c)).casefold()


def alike(names: list[str]) -> dict[str, list[str]]:
    """{name: the other NAMES it looks like}, for those that look like another: the same looks_alike(), or the same
    but where one has a letter outside ASCII and the other an ASCII one (Cyrillic а for a, Greek ο for o: Unicode's
    look-alikes are thousands; any non-ASCII letter in place of an ASCII one is taken for one). Two names no one
    reading a table of grades tells apart are among them."""
    def same(x: str, y: str) -> bool:
        return all(a == b or a.isascii() != b.isascii() for a, b in zip(x, y, strict=True))  # one length

    keys = {n: looks_alike(n) for n in names}
    by_length: dict[int, list[str]] = {}
    for n in names:
        by_length.setdefault(len(keys[n]), []).append(n)
    out: dict[str, list[str]] = {}
    for group in by_length.values():
        for i, n in enumerate(group):
            for m in group[i + 1:]:
                if same(keys[n], keys[m]):
                    out.setdefault(n, []).append(m)
                    out.setdefault(m, []).append(n)
    return out


def escaped(name: str) -> str:
    """NAME (sanitize()d: a backslash of its own is two already) with every character outside ASCII as its \\u
    escape (аlice: \\u0430lice): two names alike() pairs, shown so that they read apart."""
    return "".join(c if c.isascii() else f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"
                   for c in name)


def one_line(text: str, most: int = 300) -> str:
    """sanitize(TEXT) on one line: newlines and tabs are spaces, runs of spaces one."""
    return " ".join(sanitize(text, most * 4).split())[:most]

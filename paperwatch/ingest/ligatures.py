"""PDF ligature damage in an entry's text: repaired into known words, the rest reported.

Pure functions (pyspellchecker's English dictionary, loaded once per process).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

#: Characters that text extracted from PDFs set in old TeX fonts holds in place of a
#: ligature (the font's ligature slots map to Latin-1 code points): di®erent,
#: e±cient, classi¯ed, °ow. Source: the OT1 font encoding's ligature slots
#: 0x0B-0x0F rendered through Latin-1 by pdftotext (tex.stackexchange.com/q/33476).
LIGATURE_DAMAGE = {"®": "ff", "±": "ffi", "¯": "fi", "°": "fl", "²": "ffl"}
_DAMAGED_WORD = re.compile(
    r"(?<![\w®±¯°²])[A-Za-z]*[a-z]?[®±¯°²][a-z®±¯°²]*(?![\w®±¯°²])",
)


#: Reported when left unrepaired: a damage character before a lowercase letter, as a
#: ligature inside a word always stands ("Intel®", "x±y" are not reported).
_FLAGGED_DAMAGE = re.compile(r"[®±¯°²][a-z]")


@cache
def _known_words() -> Any:
    """pyspellchecker's English dictionary (loaded once per process, on first use)."""
    from spellchecker import SpellChecker

    return SpellChecker(language="en", distance=1)


_WRITTEN_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")


def _is_known_word(word: str, written: set[str]) -> bool:
    lower = word.lower()
    if lower in written:  # the undamaged word is written elsewhere in the entry
        return True
    checker = _known_words()
    parts = [p for p in lower.split("-") if p]
    return bool(parts) and all(p in checker for p in parts)


def repair_ligatures(raw: str) -> tuple[str, tuple[str, ...]]:
    """Repair PDF ligature damage inside words; report what could not be repaired.

    A word holding one of :data:`LIGATURE_DAMAGE` (``di®erent``) is rewritten with the
    ligature's letters (``different``) when the result is an English word
    (pyspellchecker's dictionary) or is written undamaged elsewhere in the same entry.
    A word that does not become a known word is left as it is and, when the damage
    character stands before a lowercase letter and the word has three letters or more,
    returned, so that it can be reported (a warning, not a rejection). The characters outside words
    (``±0.5``, ``25°C``, ``®`` after a name) are not touched.

    Args:
        raw: one entry's text as written.

    Returns:
        ``(text, unrepaired)``: the text with the known words repaired, and the damaged
        words left as they were, in order, without duplicates.
    """
    if not any(char in raw for char in LIGATURE_DAMAGE):
        return raw, ()
    unrepaired: dict[str, None] = {}
    written: set[str] | None = None
    decided: dict[str, str] = {}  # each distinct damaged word is judged once: linear time

    def repair(match: re.Match[str]) -> str:
        nonlocal written
        word = match.group(0)
        if word in decided:
            return decided[word]
        result = word
        if any(c.isalpha() for c in word):
            if written is None:
                written = set(_WRITTEN_WORD.findall(raw.lower()))
            fixed = "".join(LIGATURE_DAMAGE.get(c, c) for c in word)
            if _is_known_word(fixed, written):
                result = fixed
            elif _FLAGGED_DAMAGE.search(word) and sum(c.isalpha() for c in word) >= 3:
                unrepaired.setdefault(word, None)
        decided[word] = result
        return result

    return _DAMAGED_WORD.sub(repair, raw), tuple(unrepaired)

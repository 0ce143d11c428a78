"""Sentences of clean abstract text: where they end, and the text split at those ends.

Pure functions, shared by the cleaner (first sentence), method names and term examples.
"""

from __future__ import annotations

import re

_ABBREVIATIONS = frozenset(
    [
        "e.g",
        "i.e",
        "etc",
        "al",
        "vs",
        "cf",
        "fig",
        "figs",
        "eq",
        "eqs",
        "sec",
        "ref",
        "refs",
        "approx",
        "resp",
        "no",
        "dr",
        "prof",
        "mr",
        "ms",
        "st",
    ]
)


#: The characters a sentence ends with; the CJK ones occur only in text that is not ASCII.
_ASCII_TERMINATORS = ".!?"


_TERMINATORS = ".!?。！？"


#: What follows a sentence's terminator: white space, before a capital or digit.
_AFTER_TERMINATOR = re.compile(r"\s+(?=[\"“(\[]?[A-Z0-9\u3400-\u9fff])")


#: A sentence end: the terminator and the white space after it, before a capital or digit.
#: :func:`sentence_ends` finds its matches without running it over the whole text.
_SENTENCE_END = re.compile(f"[{_TERMINATORS}]{_AFTER_TERMINATOR.pattern}")


def sentence_ends(text: str) -> list[tuple[int, int]]:
    """The spans ``(start, end)`` of the matches of :data:`_SENTENCE_END` in ``text``, in
    order: what ``[m.span() for m in _SENTENCE_END.finditer(text)]`` gives.

    Each terminator (``. ! ?``, and ``。！？`` in text that is not ASCII) is looked up with
    ``str.find`` and only the characters after it are matched (docs/design.md, "Fast
    paths in cleaning and parsing"). Matches cannot overlap (a terminator is not white
    space), so each is found on its own.
    """
    spans: list[tuple[int, int]] = []
    for terminator in _ASCII_TERMINATORS if text.isascii() else _TERMINATORS:
        at = text.find(terminator)
        while at >= 0:
            rest = _AFTER_TERMINATOR.match(text, at + 1)
            if rest is not None:
                spans.append((at, rest.end()))
            at = text.find(terminator, at + 1)
    spans.sort()
    return spans


def split_sentences(text: str) -> list[str]:
    """Split clean text into sentences at . ! ? (and 。！？) followed by a capital or digit.

    Abbreviations (e.g., i.e., et al., Fig.) do not end a sentence.
    """
    sentences: list[str] = []
    start = 0
    for end_start, end in sentence_ends(text):
        before = text[start : end_start + 1]  # with its terminator
        last_word = before.rsplit(" ", 1)[-1].rstrip(".!?").lower()
        if last_word in _ABBREVIATIONS or (len(last_word) == 1 and last_word.isalpha()):
            continue
        sentences.append(before.strip())
        start = end
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences

"""Whether a piece of text can be read at all: the one check every text field a caller gives goes
through (questions over HTTP, the MCP tool and the library, and the text fields of data files).

Two kinds of text pass a plain emptiness check and fail later, far from where they came in: a lone
surrogate (``"\\ud800"`` is valid JSON, but no UTF-8 encoder, and so no tokenizer or spaCy, takes
it) and text made only of format characters (zero-width spaces, joiners, byte-order marks), which
is as empty as whitespace to every model and search.
"""

from __future__ import annotations

import unicodedata


def text_problem(value: str) -> str | None:
    """What makes ``value`` unusable as text, or None.

    Args:
        value: The text.

    Returns:
        ``"empty"`` for text with nothing but whitespace and format characters (category Cf), a
        sentence naming the first lone surrogate's position for text no encoder takes, else None.
    """
    for i, ch in enumerate(value):
        if "\ud800" <= ch <= "\udfff":
            return f"not valid Unicode text: a lone surrogate (U+{ord(ch):04X}) at character {i}"
    if all(ch.isspace() or unicodedata.category(ch) == "Cf" for ch in value):
        return "empty"
    return None

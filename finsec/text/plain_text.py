"""Plain text read as text: a `text/plain` page, or an SEC document with no HTML in it (an older filing's `.txt`).

The HTML parser would collapse its line breaks and column alignment (a fixed-width table becomes one run of
numbers) and read a `<` in the prose as a tag. Here lines keep their inner spacing; trailing spaces, control
characters and empty lines go, as they do from HTML.
"""

from __future__ import annotations

import re

from finsec.text.html_to_text import HtmlTextError, binary_problem

__all__ = ["decode", "looks_like_html", "plain_text"]

# A tag that only HTML has: its absence from a document with no declared type means plain text. SGML wrappers
# of EDGAR submissions (<DOCUMENT>, <TYPE>, <TEXT>, <PAGE>) are not among them.
_HTML_TAG = re.compile(rb"<(?:html|body|div|p|br|table|tr|td|font|span|b|i|center|h[1-6])[\s>/]", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def looks_like_html(data: bytes) -> bool:
    return _HTML_TAG.search(data) is not None


def plain_text(data: bytes, charset: str | None = None) -> str:
    if problem := binary_problem(data):
        raise HtmlTextError(f"The document could not be read: {problem}.")
    text = decode(data, charset)
    lines = (_CONTROL.sub("", line).expandtabs(8).rstrip() for line in text.splitlines())
    return "\n".join(line for line in lines if line.strip())


def decode(data: bytes, charset: str | None = None) -> str:
    """The declared charset when it works, else UTF-8 (a BOM dropped), else Latin-1, which never fails."""
    for encoding in (charset, "utf-8-sig"):
        if encoding:
            try:
                return data.decode(encoding)
            except (LookupError, UnicodeDecodeError):
                pass
    return data.decode("latin-1")

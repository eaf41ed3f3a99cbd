"""HTML (and inline XBRL) to plain text that keeps a filing's structure readable.

One pass over an lxml tree:
- `script`, `style`, `head`, the hidden `ix:header` block and anything styled `display:none` are dropped;
- block elements start new lines, so paragraphs and headings do not run together;
- each table row becomes one line with its cells separated by " | ", so a figure stays next to its label
  (NeMo Gym's text glues cells: `Net income (loss)(2,722)30,425`); cells holding only `$`, `)` or `%`
  are joined to their neighbour, as a reader sees them;
- inline-XBRL facts (`ix:nonFraction` and friends) are ordinary inline text, so every number survives;
- whitespace is collapsed and empty lines dropped.
"""

from __future__ import annotations

import re

import lxml.etree
import lxml.html

_SKIP = frozenset({"script", "style", "head", "title", "noscript", "template", "ix:header"})
_BLOCK = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "br", "caption", "center", "dd", "div", "dl", "dt",
        "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "html",
        "li", "main", "nav", "ol", "p", "pre", "section", "table", "tbody", "tfoot", "thead", "ul",
    }
)
_CELLS = frozenset({"td", "th"})
_HIDDEN = re.compile(r"display\s*:\s*none", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_JOIN_NEXT = frozenset({"$", "€", "£", "(", "$(", "($"})
_JOIN_PREVIOUS = re.compile(r"^[)%]+$|^\)?%$")


_SNIFF_BYTES = 8192
_BINARY_BYTES = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")  # controls no text encoding we read uses (ESC is ISO-2022's)
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


class HtmlTextError(ValueError):
    pass


def binary_problem(html: bytes) -> str | None:
    """Why `html` is binary data rather than a page (a PDF, an image, noise served as text/html), or None.
    lxml would turn such bytes into "text" of control characters and replacement marks, stored as a document."""
    head = html[:_SNIFF_BYTES]
    if head.startswith(_UTF16_BOMS):
        return None  # UTF-16 text: its NULs are half of each character
    controls = len(_BINARY_BYTES.findall(head))
    if b"\x00" in head or controls * 50 > len(head):
        return f"the document is binary data, not text ({controls} control bytes in its first {len(head):,})"
    return None


def html_to_text(html: str | bytes) -> str:
    if not html or not html.strip():
        raise HtmlTextError("HTML output was empty")
    if isinstance(html, bytes) and (problem := binary_problem(html)):
        raise HtmlTextError(f"HTML could not be parsed: {problem}.")
    if isinstance(html, str):  # lxml refuses decoded text that still declares an encoding
        html = _XML_DECLARATION.sub("", html, count=1)
    try:
        root = lxml.html.fromstring(html)
    except (lxml.etree.ParserError, ValueError) as error:
        raise HtmlTextError(f"HTML could not be parsed: {error}") from error
    lines: list[str] = []
    _Walker(lines).block(root)
    return "\n".join(lines)


def _tag(element) -> str | None:
    tag = element.tag
    return tag.lower() if isinstance(tag, str) else None  # comments and processing instructions have no name


class _Walker:
    def __init__(self, lines: list[str]):
        self.lines = lines
        self.parts: list[str] = []

    def newline(self) -> None:
        line = _SPACES.sub(" ", "".join(self.parts)).strip()
        if line:
            self.lines.append(line)
        self.parts = []

    def text(self, value: str | None) -> None:
        if value:
            self.parts.append(value)

    def block(self, element) -> None:
        self.newline()
        self.children(element)
        self.newline()

    def children(self, element) -> None:
        self.text(element.text)
        for child in element:
            self.node(child)
            self.text(child.tail)

    def node(self, element) -> None:
        tag = _tag(element)
        if tag is None or tag in _SKIP or _HIDDEN.search(element.get("style") or ""):
            return
        if tag == "tr":
            self.newline()
            self.parts.append(" | ".join(_join_cells([self.cell(c) for c in element if _tag(c) in _CELLS])))
            self.newline()
        elif tag in _BLOCK:
            self.block(element)
        else:
            self.children(element)

    def cell(self, element) -> str:
        if _HIDDEN.search(element.get("style") or ""):
            return ""
        inner: list[str] = []
        walker = _Walker(inner)
        walker.children(element)
        walker.newline()
        return " ".join(inner)


def _join_cells(cells: list[str]) -> list[str]:
    joined: list[str] = []
    pending = ""
    for cell in cells:
        if not cell:
            continue
        if cell in _JOIN_NEXT:
            pending += cell
            continue
        if _JOIN_PREVIOUS.match(cell) and joined and not pending:
            joined[-1] += cell
            continue
        joined.append(pending + cell)
        pending = ""
    if pending:
        joined.append(pending)
    return joined

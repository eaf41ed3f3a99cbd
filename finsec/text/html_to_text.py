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
from typing import Any

import lxml.etree
import lxml.html

from finsec.text.size import markup_problem

__all__ = ["binary_problem", "collapse_whitespace", "html_to_text", "HtmlTextError", "MAX_NESTED_ROWS"]

_SKIP = frozenset({"script", "style", "head", "title", "noscript", "template", "ix:header"})
_BLOCK = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "br",
        "caption",
        "center",
        "dd",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "html",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "table",
        "tbody",
        "tfoot",
        "thead",
        "ul",
    }
)
_CELLS = frozenset({"td", "th"})
_HIDDEN = re.compile(r"display\s*:\s*none", re.IGNORECASE)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_JOIN_NEXT = frozenset({"$", "€", "£", "(", "$(", "($"})
_JOIN_PREVIOUS = re.compile(r"^[)%]+$|^\)?%$")


_SNIFF_BYTES = 8192
_FEED_CHARS = 1 << 20
# controls no text encoding we read uses (ESC is ISO-2022's)
_BINARY_BYTES = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")
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
    if problem := markup_problem(html):
        raise HtmlTextError(f"The page is too large to read ({len(html):,} bytes): {problem}.")
    if isinstance(html, str):  # lxml refuses decoded text that still declares an encoding
        html = _XML_DECLARATION.sub("", html, count=1)
    # huge_tree: without it libxml2 silently drops a text node over 10 MB and everything nested over 256 deep.
    parser = lxml.html.HTMLParser(huge_tree=True)
    try:
        root = _parse(html, parser)
    except (lxml.etree.ParserError, lxml.etree.XMLSyntaxError, ValueError) as error:
        raise HtmlTextError(f"HTML could not be parsed: {error}") from error
    if limits := [e.message for e in parser.error_log if e.type_name == "ERR_RESOURCE_LIMIT"]:
        raise HtmlTextError(
            f"HTML could not be read whole ({len(html):,} bytes): {limits[0].split(',')[0]}; "
            "this server reads no part of such a page rather than a silently cut one."
        )
    return "\n".join(_walk(root))


def _parse(html: str | bytes, parser: lxml.html.HTMLParser):
    """The page's tree. A big page is fed to the parser in chunks: one call over 20 MB holds the GIL for the whole
    parse, and the event loop's thread waits for it even though the parse runs in a worker thread."""
    if len(html) <= _FEED_CHARS:
        return lxml.html.fromstring(html, parser=parser)
    for start in range(0, len(html), _FEED_CHARS):
        parser.feed(html[start : start + _FEED_CHARS])
    return parser.close()


def _tag(element) -> str | None:
    tag = element.tag
    return tag.lower() if isinstance(tag, str) else None  # comments and processing instructions have no name


class _Lines:
    """Text collected into lines: inline text runs until a block boundary ends the line."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.parts: list[str] = []

    def newline(self) -> None:
        line = collapse_whitespace("".join(self.parts))
        if line:
            self.lines.append(line)
        self.parts = []

    def text(self, value: str | None) -> None:
        if value:
            self.parts.append(value)


def collapse_whitespace(text: str, chunk: int = _FEED_CHARS) -> str:
    """`" ".join(text.split())`, a chunk at a time: one split of a 20 MB text node holds the GIL throughout, and a
    concurrent /healthz waits for it."""
    if len(text) <= chunk:
        return " ".join(text.split())
    pieces: list[str] = []
    gap = False  # whitespace since the last piece
    for start in range(0, len(text), chunk):
        part = text[start : start + chunk]
        words = " ".join(part.split())
        if words:
            if pieces and (gap or part[0].isspace()):
                pieces.append(" ")
            pieces.append(words)
        gap = not words or part[-1].isspace()
    return "".join(pieces)


# A row inside this many rows (tables nested in cells) is read as plain lines: each level joins its cells' text
# again, so unbounded nesting would cost the depth times the text.
MAX_NESTED_ROWS = 8
# What the walk does next, in a stack: pages nest up to 2,048 elements deep, past Python's recursion limit.
_TEXT, _NEWLINE, _NODE, _CHILDREN, _ROW_OPEN, _ROW_CLOSE, _CELL_OPEN, _CELL_CLOSE, _CELL_TEXT = range(9)


def _hidden(element) -> bool:
    style = element.get("style")
    return style is not None and _HIDDEN.search(style) is not None


def _walk(root) -> list[str]:  # noqa: C901 (one pass over the tree, each element kind a branch; a call per node would cost on the hot path)
    """The lines of the page: blocks start lines, a table row is one line of " | "-separated cells."""
    targets = [_Lines()]  # where text goes: the page, or the cell being read
    rows: list[list[str]] = []  # the cells of each open row
    # Any: the text, None or an lxml element (lxml has no types)
    todo: list[tuple[int, Any]] = [(_NEWLINE, None), (_CHILDREN, root), (_NEWLINE, None)]
    while todo:
        step, item = todo.pop()
        target = targets[-1]
        if step == _TEXT:
            target.text(item)
        elif step == _NEWLINE:
            target.newline()
        elif step == _CHILDREN:
            for child in reversed(item):
                if child.tail:
                    todo.append((_TEXT, child.tail))
                todo.append((_NODE, child))
            if item.text:
                todo.append((_TEXT, item.text))
        elif step == _NODE:
            tag = _tag(item)
            if tag is None or tag in _SKIP or _hidden(item):
                continue
            if tag == "tr" and len(rows) < MAX_NESTED_ROWS:
                cells = [c for c in item if _tag(c) in _CELLS]
                plan: list[tuple[int, Any]] = [(_ROW_OPEN, None)]
                for cell in cells:
                    if _hidden(cell):
                        plan.append((_CELL_TEXT, ""))
                    elif len(cell) == 0:  # text only, the common cell: no walk of its own
                        plan.append((_CELL_TEXT, " ".join((cell.text or "").split())))
                    else:
                        plan += [(_CELL_OPEN, None), (_CHILDREN, cell), (_CELL_CLOSE, None)]
                todo.extend(reversed([*plan, (_ROW_CLOSE, None)]))
            elif tag in _BLOCK:
                todo.extend(((_NEWLINE, None), (_CHILDREN, item), (_NEWLINE, None)))
            else:
                todo.append((_CHILDREN, item))
        elif step == _ROW_OPEN:
            target.newline()
            rows.append([])
        elif step == _ROW_CLOSE:
            target.parts.append(" | ".join(_join_cells(rows.pop())))
            target.newline()
        elif step == _CELL_OPEN:
            targets.append(_Lines())
        elif step == _CELL_CLOSE:
            cell = targets.pop()
            cell.newline()
            rows[-1].append(" ".join(cell.lines))
        elif step == _CELL_TEXT:
            rows[-1].append(item)
    return targets[0].lines


def _join_cells(cells: list[str]) -> list[str]:
    """Cells with `$`, `(` or `)`/`%` alone joined to their neighbour. Each joined cell is built from a list of
    parts: appending to a string held in a list copies it every time (a row of a million ")" cells)."""
    joined: list[list[str]] = []
    pending: list[str] = []
    for cell in cells:
        if not cell:
            continue
        if cell in _JOIN_NEXT:
            pending.append(cell)
            continue
        if _JOIN_PREVIOUS.match(cell) and joined and not pending:
            joined[-1].append(cell)
            continue
        joined.append([*pending, cell])
        pending = []
    if pending:
        joined.append(pending)
    return ["".join(parts) for parts in joined]

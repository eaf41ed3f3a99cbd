"""A run file as a page: one self-contained HTML file (`finsec view`) that a browser opens offline.

The page (`ui/`: HTML, a style sheet and a script, no build step, nothing fetched) is filled from the runs' data,
embedded as JSON in the page itself. Everything a model, a filing or a server wrote is data: the script puts it in
the page as text, never as markup, and the page's Content-Security-Policy runs its own script alone (by its
digest), so a `<script>` in an answer or a `javascript:` URL stays inert.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from finsec_client.profile import as_json, profile
from finsec_client.records import EpisodeRecord

__all__ = ["RunFile", "page"]


@dataclass(frozen=True)
class RunFile:
    name: str  # how the page names it: the file's name
    options: dict[str, Any] | None  # the run's options (the file's first line), when it records them
    records: list[EpisodeRecord]


def page(runs: Iterable[RunFile], ks: Iterable[int] = (1, 4, 8), threshold: float = 1.0) -> str:
    """The page showing `runs` side by side, each with its reward profile."""
    ks = sorted(set(ks))
    data = {
        "threshold": threshold,
        "ks": ks,
        "runs": [
            {
                "name": run.name,
                "options": run.options,
                "episodes": [record.to_json() for record in run.records],
                "profile": as_json(profile(run.records, ks, threshold), threshold)["tasks"],
            }
            for run in runs
        ],
    }
    ui = files("finsec_client") / "ui"
    script = (ui / "dom.js").read_text() + (ui / "view.js").read_text()
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    return (
        (ui / "view.html")
        .read_text()
        .replace("{{script_digest}}", digest)
        .replace("{{style}}", (ui / "view.css").read_text())
        .replace("{{data}}", _embedded(data))
        .replace("{{script}}", script)  # last: the data holds no `{{`, having been escaped
    )


def _embedded(data: Any) -> str:
    """JSON that a <script type="application/json"> holds verbatim: ASCII (a lone surrogate is escaped, not an
    encoding error), with no `<`, `>` or `&` (none can close the element or open a comment) and no braces pair
    that the template would read as a slot."""
    text = json.dumps(data, ensure_ascii=True, allow_nan=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("{{", "{\\u007b")):
        text = text.replace(char, escaped)
    return text

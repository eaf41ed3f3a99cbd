"""Date arguments of the search tools: YYYY-MM-DD, clamped to `max_end_date` (contract §A.11, Decision 9)."""

from __future__ import annotations

import re
from datetime import date

from finsec.tool_error import ToolError, shown

__all__ = ["checked_date", "clamped", "date_window", "DateError"]

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class DateError(ToolError):
    """A tool-level error: its text goes back to the agent."""


def checked_date(name: str, value: str | None) -> str | None:
    if value is None or value == "":
        return None
    if not _ISO_DATE.match(value):
        raise DateError(f"Invalid {name} format: '{shown(value)}'. Expected YYYY-MM-DD.")
    try:
        date.fromisoformat(value)
    except ValueError:
        raise DateError(f"Invalid {name}: '{value}' is not a calendar date. Expected YYYY-MM-DD.") from None
    return value


def clamped(start: str | None, end: str | None, cutoff: date | None) -> tuple[str | None, str | None]:
    """Both dates clamped to the cutoff; an absent end becomes the cutoff (Decision 9)."""
    if cutoff is None:
        return start, end
    limit = cutoff.isoformat()
    return (min(start, limit) if start else None), (min(end, limit) if end else limit)


def date_window(start: str | None, end: str | None, cutoff: date | None) -> tuple[str | None, str | None]:
    """Validated (start, end), clamped to the cutoff."""
    start, end = clamped(checked_date("start_date", start), checked_date("end_date", end), cutoff)
    if start and end and start > end:
        raise DateError(f"start_date '{start}' is later than end_date '{end}'.")
    return start, end

"""SEC URL shapes (contract §F.1) and the rules every part of a filing URL must follow.

`parse_filing_url` is the one gate between an agent-written URL and a file path, a cache file name and an
SEC request, so it checks lengths and characters, not just the pattern: a URL that names SEC's Archives
but breaks a rule raises InvalidFilingUrl with a message saying what to fix (a tool error, contract §A.8
step 6), rather than a 500 later or a silent detour through the generic page fetch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

from finsec.net.hosts import MAX_URL_CHARS
from finsec.tool_error import ToolError, shown

__all__ = [
    "dashed_accession",
    "document_problem",
    "FilingDocumentUrl",
    "InvalidFilingUrl",
    "is_edgar_path",
    "MAX_SEGMENT_CHARS",
    "parse_filing_url",
]

MAX_SEGMENT_CHARS = 255  # a file name on every file system we run on
# Contract §F.1's pattern, widened to catch near misses (a port, a trailing dot, a look-alike host) so they
# get the rules' message rather than the generic fetch: "sec.gov", then anything but a path, then the archive.
# Backslashes count as slashes here (browsers and WHATWG parsers read them so), so the rules refuse them.
_MARKER = re.compile(r"sec\.gov[^/\\?#]{0,260}[/\\]archives[/\\]edgar[/\\]data[/\\]")
_ARCHIVES_PREFIX = "/archives/edgar/data/"
_SAFE_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")  # so never "", "." or ".."
_CIK = re.compile(r"[0-9]{1,10}\Z")
_ACCESSION = re.compile(r"(?:[0-9]{18}|[0-9]{10}-[0-9]{2}-[0-9]{6})\Z")
_HOST_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\Z")
_FORBIDDEN_CHARS = re.compile(r"[\x00-\x20\x7f-\x9f\\]")  # controls, whitespace, backslash
_SHAPE = "https://www.sec.gov/Archives/edgar/data/<CIK>/<18-digit accession>/<document>"

# Paths below a mirror root (and below the SEC base URLs) that hold EDGAR data, and nothing else.
_EDGAR_PATHS = re.compile(
    r"(?:files/company_tickers\.json"
    r"|submissions/CIK[0-9]{10}(?:-submissions-[0-9]{3})?\.json"
    r"|Archives/edgar/data/(?:0|[1-9][0-9]{0,9})/[0-9]{18}/(?P<document>.+))\Z"
)


class InvalidFilingUrl(ToolError):
    """A URL that names SEC's filing archive but breaks one of its rules; the message is for the agent."""


@dataclass(frozen=True)
class FilingDocumentUrl:
    cik: str  # ten digits, zero-padded
    accession: str  # dashed 10-2-6
    document: str  # path below the accession folder, percent-decoded, safe segments only; may be ""

    @property
    def archive_path(self) -> str:
        """The document's path in the sec.gov URL layout, as a mirror folder stores it."""
        return f"Archives/edgar/data/{int(self.cik)}/{self.accession.replace('-', '')}/{self.document}"

    @property
    def url(self) -> str:
        return f"https://www.sec.gov/{self.archive_path}"


def dashed_accession(accession: str) -> str:
    plain = accession.replace("-", "")
    return f"{plain[:10]}-{plain[10:12]}-{plain[12:]}" if len(plain) == 18 else accession


def parse_filing_url(url: str) -> FilingDocumentUrl | None:
    """The filing a URL names; None when it does not name SEC's Archives at all (the generic fetch takes it).
    Raises InvalidFilingUrl when it does but breaks a rule. Scheme and `www.` are optional (§F.1)."""
    if not isinstance(url, str) or not _names_archives(url):
        return None
    if len(url) > MAX_URL_CHARS:
        raise _invalid(url, f"it is {len(url)} characters long; a URL may have at most {MAX_URL_CHARS}")
    if bad := _FORBIDDEN_CHARS.search(url):
        raise _invalid(url, f"it contains {_char(bad.group())}; remove it")
    rest = url.split("#", 1)[0].split("?", 1)[0]  # query and fragment do not name a document
    scheme, sep, after = rest.partition("://")
    if sep:
        if scheme.lower() not in ("http", "https"):
            raise _invalid(url, f"scheme {scheme!r} is not http or https")
        rest = after
    authority, slash, path = rest.partition("/")
    _check_authority(url, authority)
    cik, accession, document = _split_archive_path(url, _decoded(url, slash + path))
    return FilingDocumentUrl(cik.zfill(10), dashed_accession(accession), document)


def document_problem(document: str) -> str | None:
    """Why `document` (a decoded path below an accession folder) is not a safe path, or None if it is."""
    if len(document) > MAX_URL_CHARS:
        return f"the document path is {len(document)} characters long"
    for segment in document.split("/"):
        if not segment:
            return "the document path has an empty segment ('//')"
        if len(segment) > MAX_SEGMENT_CHARS:
            return f"a document path segment is {len(segment)} characters long; the limit is {MAX_SEGMENT_CHARS}"
        if not _SAFE_SEGMENT.match(segment):
            return (
                f"document path segment {shown(segment)!r} is not allowed: segments use letters, digits, "
                "'.', '_' and '-', and start with a letter or digit"
            )
    return None


def is_edgar_path(path: str) -> bool:
    """`path` is one of the EDGAR layout's files: the ticker registry, a submissions page, or a document
    `Archives/edgar/data/<cik>/<18-digit accession>/<safe path>` (canonical: CIK without leading zeros)."""
    if not isinstance(path, str) or len(path) > MAX_URL_CHARS:
        return False
    match = _EDGAR_PATHS.match(path)
    if match is None:
        return False
    document = match.group("document")
    return document is None or document_problem(document) is None


def _names_archives(url: str) -> bool:
    lowered = url[: MAX_URL_CHARS * 4].lower()  # a longer URL is refused anyway; no need to scan all of it
    if _MARKER.search(lowered):
        return True
    # An escaped slash still names the archive: decode once, as the path rules below do.
    return "%" in lowered and _MARKER.search(unquote_to_bytes(lowered).decode("latin-1")) is not None


def _check_authority(url: str, authority: str) -> None:
    if "@" in authority:
        raise _invalid(url, "credentials (user@host) are not allowed; drop the part before '@'")
    host, colon, port = authority.partition(":")
    if colon and not (port.isdigit() and len(port) <= 5 and 1 <= int(port) <= 65535):
        raise _invalid(url, f"port {shown(port)!r} is not a port number")
    host = host.lower().rstrip(".")
    if host != "sec.gov" and not host.endswith(".sec.gov"):
        raise _invalid(url, f"the host must be sec.gov or one of its subdomains, not {shown(host)!r}")
    for label in host.split("."):
        if not _HOST_LABEL.match(label):
            raise _invalid(
                url, f"host label {shown(label)!r} is not a valid DNS label (1-63 letters, digits, inner hyphens)"
            )


def _decoded(url: str, path: str) -> str:
    """Percent-decode once; what comes out is checked again by the path rules (a second layer stays '%')."""
    try:
        decoded = unquote_to_bytes(path).decode("ascii")
    except UnicodeDecodeError:
        raise _invalid(url, "its path has non-ASCII characters; SEC document names are ASCII") from None
    if bad := _FORBIDDEN_CHARS.search(decoded):
        raise _invalid(url, f"its path decodes to {_char(bad.group())}; remove it")
    return decoded


def _split_archive_path(url: str, path: str) -> tuple[str, str, str]:
    if not path.lower().startswith(_ARCHIVES_PREFIX):
        raise _invalid(url, "the path must start with /Archives/edgar/data/")
    parts = path[len(_ARCHIVES_PREFIX) :].split("/", 2)
    cik = parts[0]
    if not _CIK.match(cik):
        raise _invalid(url, f"the CIK must be 1 to 10 digits, not {shown(cik)!r}")
    if len(parts) < 2 or not parts[1]:
        raise _invalid(url, "it names no accession folder after the CIK")
    accession = parts[1]
    if not _ACCESSION.match(accession):
        raise _invalid(url, f"the accession number must be 18 digits (or 10-2-6 with dashes), not {shown(accession)!r}")
    document = parts[2].strip("/") if len(parts) > 2 else ""
    if document and (problem := document_problem(document)):
        raise _invalid(url, problem)
    return cik, accession, document


def _invalid(url: str, why: str) -> InvalidFilingUrl:
    return InvalidFilingUrl(f"Invalid SEC URL format: {shown(url)}: {why}. A filing URL looks like {_SHAPE}.")


def _char(char: str) -> str:
    return "a backslash" if char == "\\" else f"the control or space character {char!r}"

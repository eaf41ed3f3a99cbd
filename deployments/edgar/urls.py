"""SEC URL shapes (contract §F.1)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_ARCHIVES = re.compile(r"sec\.gov/Archives/edgar/data/(\d+)/([0-9A-Za-z]+)/([^?#]*)")


@dataclass(frozen=True)
class FilingDocumentUrl:
    cik: str  # ten digits, zero-padded
    accession: str  # dashed 10-2-6 when it has 18 digits
    document: str  # path below the accession folder; may be ""

    @property
    def archive_path(self) -> str:
        """The document's path in the sec.gov URL layout, as a mirror folder stores it."""
        return f"Archives/edgar/data/{int(self.cik)}/{self.accession.replace('-', '')}/{self.document}"


def dashed_accession(accession: str) -> str:
    plain = accession.replace("-", "")
    return f"{plain[:10]}-{plain[10:12]}-{plain[12:]}" if len(plain) == 18 else accession


def parse_filing_url(url: str) -> FilingDocumentUrl | None:
    match = _ARCHIVES.search(url)
    if match is None:
        return None
    cik, accession, document = match.groups()
    return FilingDocumentUrl(cik.zfill(10), dashed_accession(accession), document.strip("/"))

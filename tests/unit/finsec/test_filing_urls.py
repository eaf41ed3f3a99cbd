"""SEC filing URLs (contract §F.1): canonical forms, and the rules that turn a malformed Archives URL into a
tool error naming the problem instead of a 500 or a silent detour through the generic page fetch."""

from __future__ import annotations

import pytest

from finsec.edgar.urls import (
    MAX_SEGMENT_CHARS,
    MAX_URL_CHARS,
    FilingDocumentUrl,
    InvalidFilingUrl,
    is_edgar_path,
    parse_filing_url,
)

BASE = "https://www.sec.gov/Archives/edgar/data"


@pytest.mark.parametrize(
    ("url", "parsed"),
    [
        (
            f"{BASE}/320193/000032019324300921/aapl-20241101.htm",
            FilingDocumentUrl("0000320193", "0000320193-24-300921", "aapl-20241101.htm"),
        ),
        (
            f"{BASE}/0000320193/0000320193-24-300921/aapl-20241101.htm",  # padded CIK, dashed accession
            FilingDocumentUrl("0000320193", "0000320193-24-300921", "aapl-20241101.htm"),
        ),
        (
            "www.sec.gov/Archives/edgar/data/1/000000000000000001/ex99/ex-99.1.htm?x=1#p2",
            FilingDocumentUrl("0000000001", "0000000000-00-000001", "ex99/ex-99.1.htm"),
        ),
        (
            "sec.gov/Archives/edgar/data/1/000000000000000001/",
            FilingDocumentUrl("0000000001", "0000000000-00-000001", ""),
        ),
        (
            "HTTPS://WWW.SEC.GOV:443/archives/edgar/data/1/000000000000000001/a.htm",
            FilingDocumentUrl("0000000001", "0000000000-00-000001", "a.htm"),
        ),
        (f"{BASE}/1/000000000000000001/a%2Db.htm", FilingDocumentUrl("0000000001", "0000000000-00-000001", "a-b.htm")),
        (
            f"{BASE}/1/000000000000000001/dir%2Fa.htm",
            FilingDocumentUrl("0000000001", "0000000000-00-000001", "dir/a.htm"),
        ),
        (f"{BASE}/1/000000000000000001", FilingDocumentUrl("0000000001", "0000000000-00-000001", "")),
    ],
)
def test_canonical_forms(url: str, parsed: FilingDocumentUrl) -> None:
    assert parse_filing_url(url) == parsed


def test_archive_path_and_url_are_canonical() -> None:
    filing = parse_filing_url(f"{BASE}/0000320193/0000320193-24-300921/aapl-20241101.htm")
    assert filing.archive_path == "Archives/edgar/data/320193/000032019324300921/aapl-20241101.htm"
    assert filing.url == f"{BASE}/320193/000032019324300921/aapl-20241101.htm"
    assert is_edgar_path(filing.archive_path)


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/page.html",
        "https://www.sec.gov/cgi-bin/browse-edgar?CIK=1",
        "https://www.sec.gov/Archives/edgar/Feed/",
        "",
        "x" * 100_000,
    ],
)
def test_urls_that_do_not_name_the_archive_are_not_filings(url: str) -> None:
    assert parse_filing_url(url) is None


@pytest.mark.parametrize(
    ("url", "why"),
    [
        (
            f"{BASE}/1/000000000000000001/" + "a" * 256 + ".htm",
            f"segment is 260 characters long; the limit is {MAX_SEGMENT_CHARS}",
        ),
        (f"{BASE}/1/000000000000000001/" + "a/" * 1100, f"a URL may have at most {MAX_URL_CHARS}"),
        (f"{BASE}/1/000000000000000001/a\x00.htm", "control or space character '\\x00'"),
        (f"{BASE}/1/000000000000000001/a%00.htm", "its path decodes to the control or space character '\\x00'"),
        (f"{BASE}/1/000000000000000001/a b.htm", "control or space character ' '"),
        (f"{BASE}/1/000000000000000001/a\\b.htm", "a backslash"),
        (f"{BASE}/{'9' * 5000}/000000000000000001/a.htm", "at most 2048"),
        (f"{BASE}/{'9' * 11}/000000000000000001/a.htm", "the CIK must be 1 to 10 digits"),
        (f"{BASE}/12a/000000000000000001/a.htm", "the CIK must be 1 to 10 digits, not '12a'"),
        (f"{BASE}//000000000000000001/a.htm", "the CIK must be 1 to 10 digits, not ''"),
        (f"{BASE}/1/", "it names no accession folder"),
        (f"{BASE}/1/00000000000000001/a.htm", "the accession number must be 18 digits"),
        (f"{BASE}/1/0000000000000000001/a.htm", "the accession number must be 18 digits"),
        (f"{BASE}/1/abcdefabcdefabcdef/a.htm", "the accession number must be 18 digits"),
        (f"{BASE}/1/0000000000-0-0000001/a.htm", "the accession number must be 18 digits"),
        (f"{BASE}/1/000000000000000001/../../2/000000000000000002/b.htm", "segment '..' is not allowed"),
        (f"{BASE}/1/000000000000000001/./a.htm", "segment '.' is not allowed"),
        (f"{BASE}/1/000000000000000001/%2e%2e/x.htm", "segment '..' is not allowed"),  # decoded once, then checked
        (f"{BASE}/1/000000000000000001/%252e%252e/x.htm", "segment '%2e%2e' is not allowed"),  # not twice
        (f"{BASE}/1/000000000000000001/a//b.htm", "empty segment"),
        (f"{BASE}/1/000000000000000001/.htaccess", "segment '.htaccess' is not allowed"),
        (f"{BASE}/1/000000000000000001/caf%C3%A9.htm", "non-ASCII"),
        (f"{BASE}/1/000000000000000001/a;b.htm", "segment 'a;b.htm' is not allowed"),
        (f"https://{'a' * 64}.sec.gov/Archives/edgar/data/1/000000000000000001/a.htm", "is not a valid DNS label"),
        ("https://www..sec.gov/Archives/edgar/data/1/000000000000000001/a.htm", "host label '' is not a valid"),
        (
            "https://evil.example/?next=sec.gov/Archives/edgar/data/1/000000000000000001/a.htm",
            "the host must be sec.gov or one of its subdomains, not 'evil.example'",
        ),
        ("https://www.sec.gov.evil.example/Archives/edgar/data/1/000000000000000001/a.htm", "the host must be sec.gov"),
        ("https://user@www.sec.gov/Archives/edgar/data/1/000000000000000001/a.htm", "credentials"),
        ("https://www.sec.gov:99999/Archives/edgar/data/1/000000000000000001/a.htm", "port '99999' is not a port"),
        ("ftp://www.sec.gov/Archives/edgar/data/1/000000000000000001/a.htm", "scheme 'ftp' is not http or https"),
        ("https://www.sec.gov/x/sec.gov/Archives/edgar/data/1/000000000000000001/a.htm", "must start with /Archives"),
        ("https://www.sec.gov/Archives%2Fedgar%2Fdata/1/000000000000000001/%2e%2e/a.htm", "segment '..'"),
    ],
)
def test_broken_archive_urls_say_what_is_wrong(url: str, why: str) -> None:
    with pytest.raises(InvalidFilingUrl) as caught:
        parse_filing_url(url)
    message = str(caught.value)
    assert message.startswith("Invalid SEC URL format: ") and why in message, message
    assert message.endswith(
        "A filing URL looks like https://www.sec.gov/Archives/edgar/data/<CIK>/<18-digit accession>/<document>."
    )
    assert len(message) < 600 and message.isprintable()  # never a 500 KB or NUL-laden echo of the input
    assert isinstance(caught.value, ValueError)


def test_longest_allowed_segment_passes() -> None:
    name = "a" * MAX_SEGMENT_CHARS
    assert parse_filing_url(f"{BASE}/1/000000000000000001/{name}").document == name


@pytest.mark.parametrize(
    "path",
    [
        "files/company_tickers.json",
        "submissions/CIK0000320193.json",
        "submissions/CIK0000320193-submissions-001.json",
        "Archives/edgar/data/320193/000032019324300921/aapl-20241101.htm",
        "Archives/edgar/data/1/000000000000000001/a/b.htm",
    ],
)
def test_edgar_layout_paths(path: str) -> None:
    assert is_edgar_path(path)


@pytest.mark.parametrize(
    "path",
    [
        "MANIFEST.json",
        "files/../MANIFEST.json",
        "files/other.json",
        "submissions/CIK320193.json",
        "submissions/page-001.json",
        "submissions/../files/company_tickers.json",
        "submissions/CIK0000320193.json/",
        "Archives/edgar/data/320193/000032019324300921/../../1018724/000101872425000004/amzn-20241231.htm",
        "Archives/edgar/data/320193/000032019324300921/",
        "Archives/edgar/data/0320193/000032019324300921/a.htm",
        "Archives/edgar/data/320193/0000320193-24-300921/a.htm",
        "Archives/edgar/data/320193/000032019324300921/a\x00",
        "Archives/edgar/data/320193/000032019324300921/files/company_tickers.json/..",
        "/files/company_tickers.json",
        "Archives/edgar/data/1/000000000000000001/" + "a" * 256,
        "",
        "x" * 100_000,
    ],
)
def test_everything_else_is_outside_the_layout(path: str) -> None:
    assert not is_edgar_path(path)

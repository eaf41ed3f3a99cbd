"""Path traversal is inert, in one process (harness/inprocess.py): filing URLs with `..`, `%2e%2e`, encoded
slashes, backslashes, NUL, over-long parts, a 5,000-digit CIK or another issuer's CIK each get a tool error that
says what to fix (contract §A.0, §A.8 step 6), nothing outside the filing layout is read (§F.1, §F.5), and with
`use_cache` nothing is written outside `cache_dir` (§F.4).

Two sources: a mirror folder with files planted beside and outside its layout (symlinks included), and live
EDGAR pointed at a loopback server over that folder, whose request log shows what was asked for.
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

import pytest

from finsec.corpus.generate import write_corpus
from finsec.edgar.urls import is_edgar_path
from harness.bodies import episode_seed, new_session_id
from harness.hostile import filing_url
from harness.inprocess import InProcess
from harness.sec_server import SecServer

SECRET = "TOPSECRET"
ARCHIVE = "https://www.sec.gov/Archives/edgar/data"
H_CIK, H_ACC, H_DOC = "990000001", "099000000124121201", "hlxr1-20231231.htm"  # HLXR1's first 10-K
H_FOLDER = f"{ARCHIVE}/{H_CIK}/{H_ACC}"
B_CIK = "990000002"  # BRWN2

HOSTILE_URLS = [
    f"{H_FOLDER}/../../../../secret.htm",
    f"{H_FOLDER}/{H_DOC}/../../../secret.htm",
    f"{H_FOLDER}/%2e%2e/%2e%2e/secret.htm",
    f"{H_FOLDER}/%2E%2E%2F%2E%2E%2Fsecret.htm",  # encoded slashes
    f"{H_FOLDER}/..%252f..%252fsecret.htm",  # encoded twice
    f"{H_FOLDER}/%c0%ae%c0%ae/secret.htm",  # overlong UTF-8 dots
    f"{H_FOLDER}\\..\\..\\secret.htm",
    f"{ARCHIVE}\\{H_CIK}\\{H_ACC}\\{H_DOC}",
    f"{H_FOLDER}/{H_DOC}%00.txt",
    f"{H_FOLDER}/{H_DOC}\x00.txt",
    f"{H_FOLDER}/.{H_DOC}",
    f"{H_FOLDER}/{'a' * 300}.htm",
    f"{H_FOLDER}/" + "/".join(["d"] * 900),
    f"{ARCHIVE}/{'9' * 5_000}/{H_ACC}/{H_DOC}",
    f"{ARCHIVE}/{'9' * 20}/{H_ACC}/{H_DOC}",
    f"{ARCHIVE}/{H_CIK}/{'0' * 19}/{H_DOC}",
    f"{ARCHIVE}/{H_CIK}/{H_ACC}/",
    f"{ARCHIVE}/{B_CIK}/{H_ACC}/{H_DOC}",  # another issuer's CIK over HLXR1's accession
    f"{ARCHIVE}/320193/../{H_CIK}/{H_ACC}/{H_DOC}",  # an AAPL-looking path climbing into another issuer
    f"{ARCHIVE}/320193/{H_ACC}/../../{H_CIK}/{H_ACC}/{H_DOC}",
    f"{ARCHIVE}/../../../files/company_tickers.json",
    f"{ARCHIVE}/{H_CIK}/{H_ACC}/escape.htm",  # a symlink out of the mirror
    f"{ARCHIVE}/{B_CIK}/099000000224681490/borrowed.htm",  # a symlink to another issuer's filing
    f"{H_FOLDER}/ｈｌｘｒ１.htm",
    "https://www.sec.gov/Archives/../files/company_tickers.json",
    "https://www.sec.gov/Archives/edgar/data/../../MANIFEST.json",
    "https://www.sec.gov.evil.example/Archives/edgar/data/990000001/099000000124121201/x.htm",
    f"https://user:pw@www.sec.gov/Archives/edgar/data/{H_CIK}/{H_ACC}/{H_DOC}",
    f"ftp://www.sec.gov/Archives/edgar/data/{H_CIK}/{H_ACC}/{H_DOC}",
    "file:///etc/passwd",
    "../../../../etc/passwd",
    "/etc/passwd",
]
ANSWERS = (
    "ERROR: url is",
    "Invalid SEC URL format",
    "Failed to download filing",
    "Failed to fetch",
    "Refused to fetch",
)
CACHE_FILES = re.compile(
    r"tickers\.json|filings_metadata/[0-9]{10}\.json"
    r"|filings/[0-9]{10}/[0-9]{18}/[A-Za-z0-9_][A-Za-z0-9._-]*\.txt"
)


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> Path:
    """A mirror with a secret beside its layout and outside it, and symlinks out of a filing folder."""
    top = tmp_path_factory.mktemp("planted")
    mirror = write_corpus(top / "mirror")
    (top / "outside.htm").write_text(f"<html><body>{SECRET} outside the mirror</body></html>")
    for place in (
        "secret.htm",
        "MANIFEST.json",
        "Archives/edgar/data/secret.htm",
        f"Archives/edgar/data/{H_CIK}/secret.htm",
    ):
        (mirror / place).write_text(f"<html><body>{SECRET} in {place}</body></html>")
    os.symlink(top / "outside.htm", mirror / "Archives/edgar/data" / H_CIK / H_ACC / "escape.htm")
    os.symlink(
        mirror / "Archives/edgar/data" / H_CIK / H_ACC / H_DOC,
        mirror / "Archives/edgar/data" / B_CIK / "099000000224681490" / "borrowed.htm",
    )
    return mirror


@pytest.fixture
def no_dns(monkeypatch):
    """Hermetic: names never resolve (the generic page fetch of a sec.gov URL would otherwise go online)."""
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if isinstance(host, str) and not re.fullmatch(r"[0-9.]+|[0-9a-fA-F:]+", host):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


SYMLINKED = {f"{ARCHIVE}/{H_CIK}/{H_ACC}/escape.htm", f"{ARCHIVE}/{B_CIK}/099000000224681490/borrowed.htm"}


def attack(app, urls=HOSTILE_URLS) -> str:
    """Every hostile URL through parse_html_page in one episode session; returns the session ID."""
    sid = new_session_id()
    assert app.post("/seed_session", json=episode_seed(sid)).status_code == 200
    for url in urls:
        response = app.post("/parse_html_page", json={"url": url, "key": "k"})
        assert response.status_code == 200, (url[:100], response.text[:300])
        reply = response.json()["results"]
        assert reply.startswith(ANSWERS), (url[:100], reply[:300])
        assert SECRET not in reply and len(reply) < 2_300, url[:100]  # quotes at most a 2,048-character URL
        if "\\" in url and "sec.gov" in url:  # a near miss of the archive gets the rules' message, not a fetch
            assert reply.startswith("Invalid SEC URL format") and "backslash" in reply, reply[:300]
    assert app.describe(sid)["documents"] == []  # nothing stored under the key
    missing = app.post("/retrieve_information", json={"prompt": "{{k}}"}).json()["results"]
    assert "not found" in missing
    # the positive control: the real filing parses, so the refusals above are the URLs', not the setup's
    assert (
        app.post("/parse_html_page", json={"url": f"{H_FOLDER}/{H_DOC}", "key": "k"})
        .json()["results"]
        .startswith("SUCCESS")
    )
    assert app.post("/sec_filing_search", json={"ticker": "HLXR1"}).json()["results"].startswith("[")
    return sid


def assert_cache_is_the_layout(top: Path, cache: Path, before: dict[str, bytes]) -> None:
    """Walk everything under `top`: what changed is inside `cache`, and every cache file is a layout file."""
    after = snapshot(top)
    changed = {name for name in after.keys() | before.keys() if after.get(name) != before.get(name)}
    assert changed, "the positive control should have written the cache"
    outside = [name for name in changed if not (top / name).resolve().is_relative_to(cache)]
    assert outside == []
    cached = [str((top / name).relative_to(cache)) for name in changed]
    assert all(CACHE_FILES.fullmatch(name) for name in cached), cached
    assert f"filings/0{H_CIK}/{H_ACC}/{H_DOC}.txt" in cached
    assert not any(SECRET.encode() in after[name] for name in changed)


@pytest.mark.timeout(60)
def test_traversal_through_a_mirror_folder_reads_and_writes_nothing_outside_the_layout(planted, tmp_path, no_dns):
    """§F.1, §F.4, §F.5. Mutation: joining a decoded document path onto the mirror root without the segment
    rules (or following a symlink out of the accession folder) fails this; so does a cache file name built
    from the raw URL."""
    top = tmp_path
    cache, dump = top / "cache", top / "dump"
    (dump / "HLXR1").mkdir(parents=True)
    (dump / "secret.htm").write_text(f"<html><body>{SECRET} in the dump</body></html>")
    before = snapshot(top)
    mirror_before = snapshot(planted)
    with InProcess(
        corpus_dir=planted,
        use_cache=True,
        cache_dir=cache,
        sec_dump_path=dump,
        edgar_search_mode=None,
        request_timeout=5.0,
    ) as app:
        attack(app)
    assert_cache_is_the_layout(top, cache.resolve(), before)
    assert snapshot(planted) == mirror_before  # the mirror is read-only to us


@pytest.mark.timeout(60)
def test_traversal_against_live_edgar_asks_sec_only_for_layout_paths(planted, tmp_path, no_dns):
    """The live source (§F.2) builds its request from the parsed filing URL, never from the agent's text:
    the loopback SEC server sees layout paths only. Mutation: requesting the URL as the agent wrote it."""
    cache = tmp_path / "cache"
    before = snapshot(tmp_path)
    with SecServer(planted) as sec:
        with InProcess(
            edgar_source="live",
            sec_www_base_url=sec.url,
            sec_data_base_url=sec.url,
            fetch_trusted_networks=["127.0.0.1/32"],
            edgar_search_mode=None,
            use_cache=True,
            cache_dir=cache,
            retry_backoff_seconds=0.01,
            request_timeout=5.0,
        ) as app:
            attack(app, [url for url in HOSTILE_URLS if url not in SYMLINKED])  # what SEC links is SEC's
        asked = [seen.path for seen in sec.seen]
    assert asked and all(is_edgar_path(path) for path in asked), asked
    assert not any("secret" in path or "MANIFEST" in path for path in asked), asked
    assert_cache_is_the_layout(tmp_path, cache.resolve(), before)


def test_another_issuers_cik_never_serves_the_first_issuers_filing(planted, no_dns):
    """§F.1: a filing is named by CIK and accession together. Mutation: looking a document up by accession
    (or by file name) alone would hand HLXR1's 10-K out under BRWN2's CIK."""
    with InProcess(corpus_dir=planted, edgar_search_mode=None) as app:
        app.post("/seed_session", json=episode_seed(new_session_id()))
        reply = app.post("/parse_html_page", json={"url": f"{ARCHIVE}/{B_CIK}/{H_ACC}/{H_DOC}", "key": "k"})
        assert reply.json()["results"].startswith("Failed to download filing")
        assert (
            app.post("/parse_html_page", json={"url": filing_url("HLXR1"), "key": "k"})
            .json()["results"]
            .startswith("SUCCESS")
        )

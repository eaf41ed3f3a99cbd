"""The mirror source reads only the EDGAR layout, inside its folders, under a byte cap and off the event
loop; the disk cache names files safely; submissions data of the wrong shape is skipped (contract §F.1-F.4)."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path

import pytest

import finsec.edgar.source as source_module
from finsec.corpus.generate import ISSUERS, write_corpus
from finsec.corpus.generate import filings as corpus_filings
from finsec.edgar.cache import MAX_NAME_CHARS, DiskCache
from finsec.edgar.companies import Company, CompanyDirectory, FilingsUnavailable, parse_tickers
from finsec.edgar.source import JSON_OFF_LOOP_BYTES, MirrorSource
from finsec.edgar.urls import FilingDocumentUrl, parse_filing_url

REAL = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "edgar-real"
FIRST = next(f for f in corpus_filings() if f.form == "10-K")
OTHER = next(f for f in corpus_filings() if f.issuer != FIRST.issuer)


def run(coroutine):
    return asyncio.run(coroutine)


@pytest.fixture
def mirror(tmp_path_factory) -> Path:
    root = write_corpus(tmp_path_factory.mktemp("corpus") / "mirror")
    (root / "MANIFEST.json").write_text('{"secret": "not a filing"}')
    return root


def accession_folder(filing) -> str:
    return filing.url_path.rsplit("/", 1)[0]


# ----- the layout -----


def test_mirror_serves_the_layout(mirror: Path) -> None:
    source = MirrorSource(mirror)
    assert run(source.read_archive(FIRST.url_path)).startswith(b"<?xml")
    assert isinstance(run(source.read_json("files/company_tickers.json")), dict)
    assert isinstance(run(source.read_json(f"submissions/CIK{FIRST.issuer.cik:010d}.json")), dict)


@pytest.mark.parametrize(
    "path",
    [
        "MANIFEST.json",
        "questions.json",
        "files/../MANIFEST.json",
        "submissions/../MANIFEST.json",
        "submissions/../files/company_tickers.json",
        f"{accession_folder(FIRST)}/../../../../../files/company_tickers.json",
        f"{accession_folder(FIRST)}/../../{OTHER.issuer.cik}/{OTHER.accession.replace('-', '')}/{OTHER.document}",
        f"Archives/edgar/data/{FIRST.issuer.cik:010d}/{FIRST.accession.replace('-', '')}/{FIRST.document}",
        f"{accession_folder(FIRST)}/",
        f"{accession_folder(FIRST)}/{FIRST.document}\x00",
        "/etc/passwd",
        "Archives/edgar/data/1/000000000000000001/" + "a/" * 250_000,
    ],
)
def test_mirror_refuses_everything_outside_the_layout(mirror: Path, path: str) -> None:
    source = MirrorSource(mirror)
    assert run(source.read_archive(path)) is None
    assert run(source.read_json(path)) is None


def test_a_symlink_may_not_leave_its_accession_folder(mirror: Path, tmp_path: Path) -> None:
    folder = mirror / accession_folder(FIRST)
    (folder / "other-issuer.htm").symlink_to(mirror / OTHER.url_path)
    outside = tmp_path / "outside.htm"
    outside.write_text("<html>outside the mirror</html>")
    (folder / "outside.htm").symlink_to(outside)
    (folder / "same-folder.htm").symlink_to(folder / FIRST.document)  # stays inside: fine
    source = MirrorSource(mirror)
    assert run(source.read_archive(f"{accession_folder(FIRST)}/other-issuer.htm")) is None
    assert run(source.read_archive(f"{accession_folder(FIRST)}/outside.htm")) is None
    same_folder = run(source.read_archive(f"{accession_folder(FIRST)}/same-folder.htm"))
    assert same_folder == (mirror / FIRST.url_path).read_bytes()
    (mirror / "submissions" / "CIK0000000042.json").symlink_to(mirror / "MANIFEST.json")
    assert run(source.read_json("submissions/CIK0000000042.json")) is None


def test_mirror_reads_at_most_max_bytes(mirror: Path) -> None:
    size = (mirror / FIRST.url_path).stat().st_size
    assert run(MirrorSource(mirror, max_bytes=size).read_archive(FIRST.url_path)) is not None
    assert run(MirrorSource(mirror, max_bytes=size - 1).read_archive(FIRST.url_path)) is None


def test_mirror_touches_the_file_system_only_off_the_event_loop(mirror: Path, monkeypatch) -> None:
    on_loop: list[str] = []

    def spying(name, real):
        def spy(*args, **kwargs):
            if threading.current_thread() is threading.main_thread():  # asyncio.run's loop runs here
                on_loop.append(name)
            return real(*args, **kwargs)

        return spy

    source = MirrorSource(mirror)  # built before the loop runs, like at replica start
    for name in ("resolve", "is_file", "stat", "exists", "read_bytes"):
        monkeypatch.setattr(Path, name, spying(name, getattr(Path, name)))
    monkeypatch.setattr(os, "fstat", spying("fstat", os.fstat))
    monkeypatch.setattr(source_module, "open", spying("open", open), raising=False)
    assert run(source.read_archive(FIRST.url_path)) is not None
    assert run(source.read_json("files/company_tickers.json")) is not None
    assert run(source.read_archive(f"{accession_folder(FIRST)}/missing.htm")) is None
    assert on_loop == []


def test_big_submissions_json_is_parsed_off_the_event_loop(mirror: Path, monkeypatch) -> None:
    path = mirror / f"submissions/CIK{FIRST.issuer.cik:010d}.json"
    main = json.loads(path.read_text())
    main["padding"] = "x" * (2 * JSON_OFF_LOOP_BYTES)
    path.write_text(json.dumps(main))
    parsed_on_loop: list[int] = []
    real_loads = json.loads

    def loads(raw, *args, **kwargs):
        if threading.current_thread() is threading.main_thread():
            parsed_on_loop.append(len(raw))
        return real_loads(raw, *args, **kwargs)

    monkeypatch.setattr(json, "loads", loads)

    async def filings():
        directory = CompanyDirectory(MirrorSource(mirror))
        await directory.load()
        return await directory.filings(directory.lookup(FIRST.issuer.ticker))

    assert any(f.accession_number == FIRST.accession for f in run(filings()))
    assert parsed_on_loop and all(size <= JSON_OFF_LOOP_BYTES for size in parsed_on_loop)  # small ones may stay


# ----- the real filings (skipped without ../shared/data/edgar-real) -----


@pytest.mark.skipif(not REAL.is_dir(), reason="real EDGAR mirror not present")
def test_real_mirror_serves_filings_and_nothing_else() -> None:
    source = MirrorSource(REAL)
    aapl = "Archives/edgar/data/320193/000032019324300921/aapl-20241101.htm"
    assert run(source.read_archive(aapl)).lstrip()[:1] == b"<"
    assert run(source.read_json("MANIFEST.json")) is None
    sneaky = "Archives/edgar/data/320193/000032019324300921/../../1018724/000101872425000004/amzn-20241231.htm"
    assert run(source.read_archive(sneaky)) is None
    assert run(MirrorSource(REAL, max_bytes=100_000).read_archive(aapl)) is None  # real filings are MBs


# ----- the disk cache's file names (contract §F.4) -----


def test_cache_names_follow_the_contract_for_ordinary_documents(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "cache")
    url = parse_filing_url("https://www.sec.gov/Archives/edgar/data/320193/000032019324300921/ex99/ex-99.1.htm")
    assert cache.text_file(url) == cache.root / "filings/0000320193/000032019324300921/ex99_ex-99.1.htm.txt"
    index = parse_filing_url("https://www.sec.gov/Archives/edgar/data/320193/000032019324300921/")
    assert cache.text_file(index).name == "index.txt"
    assert cache.metadata_file("0000320193") == cache.root / "filings_metadata/0000320193.json"


def test_cache_names_are_bounded_distinct_and_stay_inside(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "cache")
    long_a = FilingDocumentUrl("0000000001", "0000000000-00-000001", "a" * 255 + "/" + "b" * 255)
    long_b = FilingDocumentUrl("0000000001", "0000000000-00-000001", "a" * 255 + "/" + "c" * 255)
    for url in (long_a, long_b):
        assert len(cache.text_file(url).name) <= MAX_NAME_CHARS + len(".txt")
        run(cache.write_text(cache.text_file(url), url.document[-1]))  # a name over 255 bytes would raise here
    assert cache.text_file(long_a) != cache.text_file(long_b)
    assert run(cache.read_text(cache.text_file(long_a))) == "b"
    hostile = [FilingDocumentUrl("..", "..", ".."), FilingDocumentUrl("../../x", "a/b", "../../../etc/passwd")]
    for url in hostile:
        assert cache.text_file(url).resolve().is_relative_to(cache.root / "filings")
    for cik in ("..", "../../outside", "", "x" * 1000):
        path = cache.metadata_file(cik)
        assert path.resolve().parent == cache.root / "filings_metadata" and len(path.name) <= 255


# ----- submissions and ticker data of the wrong shape -----


def write_submissions(mirror: Path, issuer, document: dict) -> None:
    (mirror / f"submissions/CIK{issuer.cik:010d}.json").write_text(json.dumps(document))


def load_filings(mirror: Path, ticker: str, cache: DiskCache | None = None):
    async def load():
        directory = CompanyDirectory(MirrorSource(mirror), cache)
        await directory.load()
        return await directory.filings(directory.lookup(ticker))

    return run(load())


def test_rows_whose_url_would_break_the_rules_are_skipped(mirror: Path) -> None:
    issuer = ISSUERS[0]
    good = "0000000001-24-000001"
    columns = {
        "accessionNumber": [good, "0000000001-24-000002", "short", "0000000001-24-000004", 7],
        "form": ["10-K"] * 5,
        "filingDate": ["2024-01-01"] * 5,
        "reportDate": ["2023-12-31", None, "", 5, ""],
        "primaryDocument": ["a.htm", "../../1/000000000000000001/x.htm", "b.htm", "c d.htm", "e.htm"],
    }
    write_submissions(mirror, issuer, {"filings": {"recent": columns, "files": "not a list"}})
    filings = load_filings(mirror, issuer.ticker)
    assert [f.accession_number for f in filings] == [good]
    assert filings[0].report_date == "2023-12-31" and parse_filing_url(filings[0].filing_url).document == "a.htm"


@pytest.mark.parametrize(
    "document",
    [
        {"filings": []},
        {"filings": {"recent": "x"}},
        {"filings": {"recent": {"accessionNumber": "x"}}},
        {"filings": {"recent": {}, "files": [1, None, {"name": 5}, {"name": "../MANIFEST.json"}]}},
    ],
)
def test_submissions_of_the_wrong_shape_give_no_filings(mirror: Path, document) -> None:
    write_submissions(mirror, ISSUERS[0], document)
    assert load_filings(mirror, ISSUERS[0].ticker) == []


@pytest.mark.parametrize("document", [[], "x", 7, True])
def test_submissions_json_that_is_not_an_object_is_no_answer(mirror: Path, document) -> None:
    """Not a submissions document at all: EDGAR gave no data (nothing kept), not "this company has no filings"."""
    write_submissions(mirror, ISSUERS[0], document)
    with pytest.raises(FilingsUnavailable, match="is not a JSON object"):
        load_filings(mirror, ISSUERS[0].ticker)


def test_a_cached_metadata_file_of_the_wrong_shape_is_a_miss(mirror: Path, tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "cache")
    issuer = FIRST.issuer
    cache.metadata_file(f"{issuer.cik:010d}").write_text(json.dumps({"x": {"unexpected": 1}}))
    assert any(f.accession_number == FIRST.accession for f in load_filings(mirror, issuer.ticker, cache))


def test_ticker_rows_need_a_numeric_cik() -> None:
    assert parse_tickers({"0": {"cik_str": 320193, "ticker": "aapl", "title": "Apple"}}) == {
        "AAPL": Company("AAPL", "0000320193", "Apple")
    }
    for cik in ("../../x", "", "12345678901", "1e5", -1):
        with pytest.raises(ValueError, match="cik_str must be 1 to 10 digits"):
            parse_tickers({"0": {"cik_str": cik, "ticker": "x", "title": "X"}})


def test_an_overlay_with_a_bad_cik_stops_the_start(mirror: Path, tmp_path: Path) -> None:
    overlay = tmp_path / "extra.json"
    overlay.write_text(json.dumps({"0": {"cik_str": "../../x", "ticker": "bad", "title": "Bad"}}))
    with pytest.raises(RuntimeError, match="cik_str must be 1 to 10 digits"):
        run(CompanyDirectory(MirrorSource(mirror), supplementary_tickers=overlay).load())


def test_cached_rows_with_urls_that_break_the_rules_are_dropped(mirror: Path, tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "cache")
    issuer = FIRST.issuer
    good = load_filings(mirror, issuer.ticker, cache)  # fills the cache
    path = cache.metadata_file(f"{issuer.cik:010d}")
    rows = json.loads(path.read_text())
    bad = dict(
        next(iter(rows.values())),
        accession_number="0000000001-24-999999",
        filing_url=f"https://www.sec.gov/Archives/edgar/data/{issuer.cik}/000000000124999999/../x.htm",
    )
    rows["000000000124999999"] = bad
    path.write_text(json.dumps(rows))
    assert load_filings(mirror, issuer.ticker, cache) == good

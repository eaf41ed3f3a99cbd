"""The EDGAR access layer without Ray: mirror and live sources (live against a real loopback server), the
client policy of contract §F.2, submissions paging (§F.1), the disk cache (§F.4) and the filing pipeline (§F.5)."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path

import pytest

from finsec.corpus.generate import filings as corpus_filings
from finsec.corpus.generate import write_corpus
from finsec.edgar.cache import DiskCache
from finsec.edgar.companies import CompanyDirectory
from finsec.edgar.filing_text import DocumentUnavailable, FilingTexts, Page, text_digest
from finsec.edgar.limiter import LocalRateLimiter, PacedSchedule
from finsec.edgar.live import LiveSource
from finsec.edgar.source import MirrorSource
from finsec.net.policy import FetchPolicy
from harness.sec_server import SecServer, most_in_any_window

UA = "finsec-serve-tests/1.0 tests@example.com"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus") / "mirror")


@pytest.fixture
def server(corpus):
    with SecServer(corpus) as running:
        yield running


def live(server: SecServer, *, timeout_seconds: float = 2.0, max_bytes: int = 20_000_000, **options) -> LiveSource:
    """LiveSource as services.edgar_source builds it, with the loopback stand-in trusted (and nothing else)."""
    limiter = options.pop("limiter", LocalRateLimiter(100, 1.0))
    policy = FetchPolicy(
        sec_base_urls=[server.url],
        trusted_networks=["127.0.0.1/32"],
        max_bytes=max_bytes,
        timeout_seconds=timeout_seconds,
        user_agent=UA,
        limiter=limiter,
    )
    defaults = dict(
        fetcher=policy.sec_fetcher(),
        www_base_url=server.url,
        data_base_url=server.url,
        limiter=limiter,
        backoff_seconds=0.01,
    )
    return LiveSource(**{**defaults, **options})


def run(coroutine):
    return asyncio.run(coroutine)


FIRST = next(f for f in corpus_filings() if f.form == "10-K")


# ----- the rate limit's schedule -----


def test_schedule_spaces_starts_evenly():
    now = [0.0]
    schedule = PacedSchedule(limit=4, window_seconds=1.0, clock=lambda: now[0])
    assert [schedule.reserve() for _ in range(6)] == [0.0, 0.25, 0.5, 0.75, 1.0, 1.25]
    now[0] = 10.0
    assert schedule.reserve() == 0.0  # an idle limiter does not bank slots for a later burst


def test_local_limiter_paces_real_requests(server):
    # Starts are scheduled by the client, arrivals timed by the server: a window a little longer than the
    # one checked absorbs the jitter between the two (the deployed default is 1.25 s for a 1 s limit).
    async def burst():
        source = live(server, limiter=LocalRateLimiter(4, 0.7))
        await asyncio.gather(*(source.read_json("files/company_tickers.json") for _ in range(12)))
        await source.aclose()

    run(burst())
    times = [s.at for s in server.requests_for("files/company_tickers.json")]
    assert len(times) == 12 and most_in_any_window(times, 0.5) <= 4


# ----- the live client's policy (contract §F.2) -----


@pytest.mark.parametrize("status", [429, 503, 403])
def test_live_source_retries_throttling_statuses(server, status):
    path = FIRST.url_path
    server.script(path, [status, status])

    async def read():
        source = live(server)
        try:
            return await source.read_archive(path)
        finally:
            await source.aclose()

    assert run(read()).startswith(b"<?xml")
    assert len(server.requests_for(path)) == 3
    assert {s.user_agent for s in server.seen} == {UA}


def test_live_source_gives_up_after_its_attempts(server):
    path = FIRST.url_path
    server.script(path, [503, 503, 503])
    source = live(server)
    assert run(source.read_archive(path)) is None
    assert len(server.requests_for(path)) == 3


def test_live_source_does_not_retry_other_statuses(server):
    source = live(server)
    assert run(source.read_archive("Archives/edgar/data/1/000000000000000001/missing.htm")) is None
    assert len(server.seen) == 1


def test_live_source_times_out_a_server_that_never_answers(server):
    server.hang(FIRST.url_path, 5)
    source = live(server, timeout_seconds=0.3, max_attempts=2)
    started = time.monotonic()
    assert run(source.read_archive(FIRST.url_path)) is None
    assert time.monotonic() - started < 5 and len(server.requests_for(FIRST.url_path)) == 2


# ----- companies and submissions (contract §F.1, §F.3) -----


def test_directory_merges_submission_pages_and_skips_unreadable_ones(corpus, tmp_path):
    mirror = tmp_path / "paged"
    shutil.copytree(corpus, mirror)
    main_file = mirror / f"submissions/CIK{FIRST.issuer.cik:010d}.json"
    main = json.loads(main_file.read_text())
    recent = main["filings"]["recent"]
    older = {k: v[-1:] for k, v in recent.items()}  # the oldest filing moves to a page...
    main["filings"]["recent"] = {k: v[:-1] + v[:1] for k, v in recent.items()}  # ...and one row repeats
    cik10 = f"{FIRST.issuer.cik:010d}"
    main["filings"]["files"] = [
        {"name": f"CIK{cik10}-submissions-001.json"},
        {"name": f"CIK{cik10}-submissions-002.json"},
    ]
    main_file.write_text(json.dumps(main))
    (mirror / f"submissions/CIK{cik10}-submissions-001.json").write_text(json.dumps(older))
    (mirror / f"submissions/CIK{cik10}-submissions-002.json").write_text("{not json")

    async def load():
        directory = CompanyDirectory(MirrorSource(mirror))
        await directory.load()
        return await directory.filings(directory.lookup(FIRST.issuer.ticker.lower()))

    filings = run(load())
    assert sorted(f.accession_number for f in filings) == sorted(recent["accessionNumber"])


def test_directory_refuses_to_start_without_tickers(tmp_path):
    directory = CompanyDirectory(MirrorSource(tmp_path))
    with pytest.raises(RuntimeError, match="Failed to load SEC ticker data"):
        run(directory.load(attempts=2, backoff_seconds=0))


def test_supplementary_tickers_overlay_and_missing_file(corpus, tmp_path):
    overlay = tmp_path / "extra.json"
    overlay.write_text(
        json.dumps(
            {
                "0": {"cik_str": 42, "ticker": "new1", "title": "New Co"},
                "1": {"cik_str": 7, "ticker": FIRST.issuer.ticker, "title": "Renamed"},
            }
        )
    )
    directory = CompanyDirectory(MirrorSource(corpus), supplementary_tickers=overlay)
    run(directory.load())
    assert directory.lookup("NEW1").cik == "0000000042"
    assert directory.lookup(FIRST.issuer.ticker).name == "Renamed"
    with pytest.raises(RuntimeError, match="supplementary_tickers_fpath not found"):
        run(CompanyDirectory(MirrorSource(corpus), supplementary_tickers=tmp_path / "nope.json").load())


def test_disk_cache_serves_tickers_metadata_and_text_once_written(corpus, tmp_path):
    mirror = tmp_path / "mirror"
    shutil.copytree(corpus, mirror)
    cache = DiskCache(tmp_path / "cache")
    url = "https://www.sec.gov/" + FIRST.url_path

    async def read_all():
        directory = CompanyDirectory(MirrorSource(mirror), cache)
        await directory.load()
        filings = await directory.filings(directory.lookup(FIRST.issuer.ticker))
        text = (await FilingTexts(MirrorSource(mirror), directory, cache=cache).parse(url)).text
        return filings, text

    first = run(read_all())
    shutil.rmtree(mirror)
    mirror.mkdir()  # the source is now empty: everything must come from the cache
    assert run(read_all()) == first
    assert (tmp_path / "cache/tickers.json").is_file()


# ----- the filing pipeline (contract §F.5) -----


class CountingSource(MirrorSource):
    def __init__(self, root):
        super().__init__(root)
        self.archive_reads = 0

    async def read_archive(self, path):
        self.archive_reads += 1
        await asyncio.sleep(0.05)
        return await super().read_archive(path)


def test_one_parse_serves_concurrent_requests_for_a_filing(corpus):
    source = CountingSource(corpus)

    async def many():
        texts = FilingTexts(source, CompanyDirectory(source))
        return [
            p.text
            for p in await asyncio.gather(*(texts.parse("https://www.sec.gov/" + FIRST.url_path) for _ in range(20)))
        ]

    results = run(many())
    assert source.archive_reads == 1 and len(set(results)) == 1 and "Total net revenues" in results[0]


def test_pages_are_fetched_each_time_and_every_text_has_its_digest(corpus):
    fetched = []

    async def fetch_page(url):
        fetched.append(url)
        return Page(b"<html><body><p>page text</p></body></html>", "text/html")

    async def read_twice():
        texts = FilingTexts(CountingSource(corpus), CompanyDirectory(MirrorSource(corpus)), fetch_page=fetch_page)
        parsed = [await texts.parse("https://docs.example.com/a.html") for _ in range(2)]
        return texts, parsed

    texts, parsed = run(read_twice())
    assert len(fetched) == 2 and [p.text for p in parsed] == ["page text"] * 2  # a page may change: never kept
    assert parsed[0].digest == text_digest("page text") and len(parsed[0].digest) == 32


def test_pipeline_errors_are_tool_messages(corpus):
    texts = FilingTexts(MirrorSource(corpus), CompanyDirectory(MirrorSource(corpus)))
    with pytest.raises(DocumentUnavailable, match="Failed to download filing from"):
        run(texts.parse("https://www.sec.gov/Archives/edgar/data/1/000000000000000001/none.htm"))
    with pytest.raises(DocumentUnavailable, match="Invalid SEC URL format"):
        run(texts.parse("https://www.sec.gov/Archives/edgar/data/1/000000000000000001/"))
    with pytest.raises(DocumentUnavailable, match="only fetches SEC filing documents"):
        run(texts.parse("https://example.com/page.html"))


def test_dump_layout_convention_serves_a_known_primary_document(corpus, tmp_path):
    dump = tmp_path / "dump"
    target = dump / FIRST.issuer.ticker / "10-K" / FIRST.period_end[:4] / FIRST.accession / "primary-document.html"
    target.parent.mkdir(parents=True)
    target.write_text("<html><body><p>From the dump: 12,345</p></body></html>")
    empty = MirrorSource(tmp_path / "nothing")

    async def read():
        directory = CompanyDirectory(MirrorSource(corpus))
        await directory.load()
        await directory.filings(directory.lookup(FIRST.issuer.ticker))  # metadata now in memory
        texts = FilingTexts(empty, directory, dump_root=dump)
        found = (await texts.parse("https://www.sec.gov/" + FIRST.url_path)).text
        exhibit = FIRST.url_path.rsplit("/", 1)[0] + "/ex99.htm"  # never answered with the primary document
        with pytest.raises(DocumentUnavailable):
            await texts.parse("https://www.sec.gov/" + exhibit)
        return found, texts.reads_by_source

    text, reads = run(read())
    assert text == "From the dump: 12,345" and reads["sec-corpus"] == 1


FIXED_WIDTH = b"""<DOCUMENT>
<TYPE>10-K
<TEXT>
                                        1996         1995
Net sales                           $ 9,833      $11,062
Income (loss) <before> taxes         (1,295)         424
</TEXT>
</DOCUMENT>
"""


def test_plain_text_is_read_as_text_with_its_lines_and_columns(corpus, tmp_path):
    """A text/plain page, and an SEC document with no HTML in it: the HTML parser would run the table into one line
    and read "<before>" as a tag."""

    async def fetch_page(url):
        return Page(FIXED_WIDTH, "text/plain", "ascii")

    mirror = Path(shutil.copytree(corpus, tmp_path / "mirror"))
    folder = FIRST.url_path.rsplit("/", 1)[0]
    document, wrapped = folder + "/old-10k.txt", folder + "/wrapped-10k.txt"
    (mirror / document).write_bytes(FIXED_WIDTH)
    (mirror / wrapped).write_bytes(b"<DOCUMENT><TEXT><html><p>Net sales</p> <p>9,833</p></html>")

    async def read():
        texts = FilingTexts(MirrorSource(mirror), CompanyDirectory(MirrorSource(mirror)), fetch_page=fetch_page)
        return [
            (await texts.parse(url)).text
            for url in (
                "https://docs.example.com/old.txt",
                "https://www.sec.gov/" + document,
                "https://www.sec.gov/" + wrapped,
            )
        ]

    page, filing, html_inside = run(read())
    assert page == filing
    assert page.split("\n")[4:6] == [
        "Net sales                           $ 9,833      $11,062",
        "Income (loss) <before> taxes         (1,295)         424",
    ]
    assert html_inside.split("\n")[-2:] == ["Net sales", "9,833"]  # a submission wrapping HTML is HTML

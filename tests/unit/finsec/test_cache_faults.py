"""The disk cache (contract §F.3, §F.4) fails, and no tool notices: a read that fails is a miss (the filing is
fetched, a warning logged), a write that fails is logged and the fetched result served, a truncated file is a
miss. The same holds for the read-only dump (§F.5), which is also read under a byte cap.

How each fault is made (real files and real file systems wherever this machine allows it):
- a directory where a cache file goes, and a regular file where a cache folder goes: real IsADirectoryError,
  NotADirectoryError and FileExistsError from the OS, on any machine (chmod would not do: the tests run as
  root, whom a mode of 0o500 does not stop);
- a read-only and a full file system: a real tmpfs, remounted read-only or filled up (EROFS, ENOSPC). Mounting
  needs root; where it is not allowed these two are skipped, and ENOSPC is still covered by
- ENOSPC injected at the cache's one file-writing seam (`finsec.edgar.cache._atomic_write`);
- truncated cache files, a symlink loop and an oversized (sparse) file in the dump: real files.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import subprocess
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

import finsec.edgar.cache as cache_module
from finsec.corpus.generate import filings
from finsec.edgar.cache import DiskCache
from finsec.edgar.companies import CompanyDirectory
from finsec.edgar.filing_text import DocumentUnavailable, FilingTexts
from finsec.edgar.source import DEFAULT_MAX_BYTES, MirrorSource
from finsec.edgar.urls import parse_filing_url
from harness.bodies import episode_seed, new_session_id
from harness.inprocess import InProcess

FIRST = next(f for f in filings() if f.form == "10-K")
CIK10 = f"{FIRST.issuer.cik:010d}"
CONCURRENT = 4  # parses of one filing at once: they share one load (single flight), and so its fate


def run(coroutine):
    return asyncio.run(coroutine)


def results(response) -> str:
    assert response.status_code == 200, response.text[:500]
    return response.json()["results"]


def cache_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == cache_module.__name__ and r.levelno == logging.WARNING]


# ----- ways to break a cache that worked when the replica started -----


@contextmanager
def tmpfs(where: Path, size: str = "1m"):
    where.mkdir(parents=True, exist_ok=True)
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except FileNotFoundError:
        pytest.skip("no mount command here")
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def plant_wrong_kinds(cache: Path, _monkeypatch) -> None:
    """A regular file where the company's text folder goes, a folder where its metadata file goes."""
    (cache / "filings" / CIK10).write_text("not a folder")
    (cache / "filings_metadata" / f"{CIK10}.json").mkdir()


def remount_read_only(cache: Path, _monkeypatch) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(cache)], check=True)


def fill_up(cache: Path, _monkeypatch) -> None:
    with open(cache / "filler", "wb", buffering=0) as filler:
        try:
            while True:
                filler.write(b"\0" * 65536)
        except OSError as error:
            assert error.errno == errno.ENOSPC


def enospc_at_the_write_seam(_cache: Path, monkeypatch) -> None:
    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(cache_module, "_atomic_write", full)


BREAKS = {  # name: (needs its own tmpfs, break it)
    "a folder and a file of the wrong kind": (False, plant_wrong_kinds),
    "a read-only file system (tmpfs)": (True, remount_read_only),
    "a full file system (tmpfs)": (True, fill_up),
    "ENOSPC at the write seam": (False, enospc_at_the_write_seam),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fault", list(BREAKS))
def test_a_cache_that_cannot_be_read_or_written_never_fails_a_tool(corpus, tmp_path, monkeypatch, caplog, fault):
    """§F.4: the cache only saves work. Mutation: letting the OSError of a cache read or write escape (a 500
    for parse_html_page and sec_filing_search, and the same exception for every caller sharing the load), or
    swallowing it without a warning, fails this."""
    on_tmpfs, break_cache = BREAKS[fault]
    with ExitStack() as stack:
        cache = stack.enter_context(tmpfs(tmp_path / "cache")) if on_tmpfs else tmp_path / "cache"
        app = stack.enter_context(InProcess(corpus_dir=corpus, use_cache=True, cache_dir=cache, edgar_search_mode=None))
        assert (cache / "tickers.json").is_file()  # the cache worked at start
        break_cache(cache, monkeypatch)
        caplog.set_level(logging.WARNING, logger=cache_module.__name__)
        clients = [app.new_client() for _ in range(CONCURRENT)]
        for client in clients:
            app.post("/seed_session", client=client, json=episode_seed(new_session_id()))

        async def parse_at_once():
            return await asyncio.gather(
                *(client.post("/parse_html_page", json={"url": FIRST.url, "key": "doc"}) for client in clients)
            )

        assert all(results(r).startswith("SUCCESS") for r in app.run(parse_at_once()))
        assert "Total net revenues" in results(
            app.post("/retrieve_information", client=clients[0], json={"prompt": "total net revenues {{doc}}"})
        )
        found = json.loads(results(app.post("/sec_filing_search", json={"ticker": FIRST.issuer.ticker})))
        assert FIRST.accession in {row["accession_number"] for row in found}
        assert any("disk cache: cannot write" in message for message in cache_warnings(caplog)), caplog.text[-2000:]


@pytest.mark.timeout(30)
def test_a_cache_dir_that_is_not_a_folder_leaves_the_server_working_uncached(corpus, tmp_path, caplog):
    """A cache_dir that names a regular file (every cache path is then under a file): the server starts, says
    why nothing is cached, and serves every tool. Mutation: failing the start on the cache's folders."""
    cache = tmp_path / "cache"
    cache.write_text("not a folder")
    caplog.set_level(logging.WARNING, logger=cache_module.__name__)
    with InProcess(corpus_dir=corpus, use_cache=True, cache_dir=cache, edgar_search_mode=None) as app:
        app.post("/seed_session", json=episode_seed(new_session_id()))
        assert results(app.post("/parse_html_page", json={"url": FIRST.url, "key": "doc"})).startswith("SUCCESS")
        found = json.loads(results(app.post("/sec_filing_search", json={"ticker": FIRST.issuer.ticker})))
        assert FIRST.accession in {row["accession_number"] for row in found}
    assert cache.read_text() == "not a folder"
    assert any(str(cache) in message for message in cache_warnings(caplog))


# ----- what a cache file holds -----


def read_filing(source_root: Path, cache: DiskCache) -> tuple[str, FilingTexts]:
    async def read():
        texts = FilingTexts(MirrorSource(source_root), CompanyDirectory(MirrorSource(source_root)), cache=cache)
        return (await texts.parse(FIRST.url)).text, texts

    return run(read())


@pytest.mark.parametrize("keep", [0, 0.5, -1], ids=["empty", "half", "all but its last byte"])
def test_a_truncated_text_file_is_a_miss(corpus, tmp_path, keep):
    """§F.4's text files (a crash after the rename but before the data reached the disk, a copy cut short).
    Mutation: serving what the file holds without checking it is whole fails this: the agent would get part
    of the filing (or nothing) as if it were all of it."""
    cache = DiskCache(tmp_path / "cache")
    text, _ = read_filing(corpus, cache)
    path = cache.text_file(parse_filing_url(FIRST.url))
    whole = path.read_bytes()
    path.write_bytes(whole[: int(len(whole) * keep) if keep >= 0 else keep])

    again, texts = read_filing(corpus, cache)
    assert again == text and texts.reads_by_source == {"source": 1}  # fetched again...
    assert path.read_bytes() == whole  # ...and cached again, whole
    assert read_filing(tmp_path / "no-source", cache)[1].reads_by_source == {"cache": 1}


@pytest.mark.parametrize("registry", ["[]", '{"0": 5}', '{"0": {"ticker": "X"}}', '"tickers"'])
def test_a_cached_ticker_registry_of_the_wrong_shape_is_downloaded_again(corpus, tmp_path, registry):
    """§F.2 step 1: a corrupt tickers.json triggers a re-download. Mutation: trusting a cached file that parses
    as JSON but is not the registry (the server would not start) fails this."""
    cache = DiskCache(tmp_path / "cache")
    cache.tickers_file.write_text(registry)
    directory = CompanyDirectory(MirrorSource(corpus), cache)
    run(directory.load(attempts=1))
    assert directory.lookup(FIRST.issuer.ticker).cik == CIK10
    assert isinstance(json.loads(cache.tickers_file.read_text()), dict)  # replaced by the registry


@pytest.mark.parametrize("field, value", [("filing_date", 20240101), ("form", None), ("report_date", ["2023"])])
def test_a_cached_metadata_row_of_the_wrong_types_is_a_miss(corpus, tmp_path, field, value):
    """§F.3's metadata file, edited or written by another program: a row whose fields are not strings would
    break the newest-first sort (a TypeError, a 500). Mutation: accepting any row that has the right keys."""
    cache = DiskCache(tmp_path / "cache")

    async def search():
        directory = CompanyDirectory(MirrorSource(corpus), cache)
        await directory.load()
        return await directory.filings(directory.lookup(FIRST.issuer.ticker))

    good = run(search())
    path = cache.metadata_file(CIK10)
    rows = json.loads(path.read_text())
    next(iter(rows.values()))[field] = value
    path.write_text(json.dumps(rows))
    assert run(search()) == good  # read again from the source
    assert json.loads(path.read_text()) != rows  # and the cache file rewritten


# ----- the dump (§F.5 b) -----


def dump_document(dump: Path) -> Path:
    return dump / FIRST.issuer.ticker / "10-K" / FIRST.period_end[:4] / FIRST.accession / "primary-document.html"


def parse_through_dump(corpus: Path, dump: Path) -> FilingTexts:
    async def read():
        directory = CompanyDirectory(MirrorSource(corpus))
        await directory.load()
        await directory.filings(directory.lookup(FIRST.issuer.ticker))  # metadata in memory: the dump is used
        texts = FilingTexts(MirrorSource(corpus), directory, dump_root=dump)
        assert "Total net revenues" in (await texts.parse(FIRST.url)).text  # from the source
        return texts

    return run(read())


def test_a_dump_file_that_cannot_be_read_falls_back_to_the_source(corpus, tmp_path):
    """A symlink loop where the dump's document is (Path.resolve raises). Mutation: letting the read's error
    escape (a 500) fails this."""
    target = dump_document(tmp_path / "dump")
    target.parent.mkdir(parents=True)
    target.symlink_to(target)
    assert parse_through_dump(corpus, tmp_path / "dump").reads_by_source == {"source": 1}


def test_a_dump_file_over_the_byte_cap_is_not_read(corpus, tmp_path, caplog):
    """The dump is read under the same cap as a fetch (fetch_max_bytes' default). Mutation: reading the whole
    file, whatever its size, fails this: the sparse file's text would be served from the dump."""
    target = dump_document(tmp_path / "dump")
    target.parent.mkdir(parents=True)
    with open(target, "wb") as file:
        file.write(b"<html><body><p>From the dump</p>")
        file.truncate(DEFAULT_MAX_BYTES + 1)  # sparse: no 20 MB written
    caplog.set_level(logging.WARNING)
    assert parse_through_dump(corpus, tmp_path / "dump").reads_by_source == {"source": 1}
    assert any("byte limit" in r.getMessage() for r in caplog.records)


def test_a_dump_without_a_usable_file_and_no_source_is_the_tool_error(corpus, tmp_path):
    target = dump_document(tmp_path / "dump")
    target.parent.mkdir(parents=True)
    target.symlink_to(target)

    async def read():
        directory = CompanyDirectory(MirrorSource(corpus))
        await directory.load()
        await directory.filings(directory.lookup(FIRST.issuer.ticker))
        await FilingTexts(MirrorSource(tmp_path / "empty"), directory, dump_root=tmp_path / "dump").parse(FIRST.url)

    with pytest.raises(DocumentUnavailable, match="Failed to download filing from"):
        run(read())

"""Fixtures shared by the unit tests that fetch from a loopback server in the sec.gov layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from finsec.corpus.generate import write_corpus
from harness.sec_server import SecServer


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The embedded corpus written to a folder of this module's (tests may plant files in it)."""
    return write_corpus(tmp_path_factory.mktemp("corpus") / "mirror")


@pytest.fixture(scope="module")
def sec_server(corpus):
    with SecServer(corpus) as running:
        yield running


@pytest.fixture
def sec(sec_server):
    """The module's SEC server, with nothing scripted and no request remembered."""
    sec_server.reset()
    return sec_server

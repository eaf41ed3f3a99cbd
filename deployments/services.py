"""What the routes work with, built once per ingress replica."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from session_store.store import SessionStore

from .corpus.generate import embedded_corpus_dir
from .documents import FilingTexts
from .edgar.mirror import MirrorFolder
from .grading.grader import Grader, SubstringGrader
from .retrieval.passages import PassageRetriever
from .settings import Settings


@dataclass
class Services:
    settings: Settings
    store: SessionStore
    filings: FilingTexts
    retriever: PassageRetriever
    grader: Grader


def build_services(settings: Settings, store: SessionStore) -> Services:
    corpus = settings.corpus_dir or embedded_corpus_dir()
    return Services(
        settings=settings,
        store=store,
        filings=FilingTexts(MirrorFolder(corpus)),
        retriever=PassageRetriever(settings.retrieval_top_passages),
        grader=SubstringGrader(),
    )


def services(request: Request) -> Services:
    return request.app.state.services

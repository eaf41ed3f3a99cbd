"""What the routes work with, built once per ingress replica from the settings."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from session_store.store import SessionStore

from .corpus.generate import embedded_corpus_dir
from .edgar.cache import DiskCache
from .edgar.companies import CompanyDirectory
from .edgar.filing_text import FilingTexts
from .edgar.live import LiveSource, RateLimiter
from .edgar.source import EdgarSource, MirrorSource
from .grading.grader import Grader, SubstringGrader
from .retrieval.passages import PassageRetriever
from .settings import Settings
from .tools.edgar_search import LiveFullTextSearch, LocalFullTextIndex
from .tools.web_search import TavilySearch, WebSearchProvider


@dataclass
class Services:
    settings: Settings
    store: SessionStore
    companies: CompanyDirectory
    filings: FilingTexts
    full_text: LocalFullTextIndex | LiveFullTextSearch | None
    web: WebSearchProvider | None
    retriever: PassageRetriever
    grader: Grader


def edgar_source(settings: Settings, limiter: RateLimiter) -> EdgarSource:
    if settings.edgar_source == "live":
        return LiveSource(
            www_base_url=settings.sec_www_base_url,
            data_base_url=settings.sec_data_base_url,
            user_agent=settings.user_agent,
            limiter=limiter,
            timeout_seconds=settings.request_timeout,
            max_attempts=settings.max_retries,
            backoff_seconds=settings.retry_backoff_seconds,
            max_connections_per_host=settings.max_connections_per_host,
        )
    return MirrorSource(settings.corpus_dir or embedded_corpus_dir())


async def build_services(settings: Settings, store: SessionStore, limiter: RateLimiter) -> Services:
    """Everything a replica needs; fails (and so the replica does) when the ticker registry cannot be loaded."""
    source = edgar_source(settings, limiter)
    cache = DiskCache(settings.cache_dir) if settings.use_cache else None
    companies = CompanyDirectory(source, cache, settings.supplementary_tickers_fpath)
    await companies.load(attempts=5 if settings.edgar_source == "live" else 1,
                         backoff_seconds=settings.retry_backoff_seconds)
    full_text = None
    if settings.edgar_search_mode == "local":
        corpus, corpus_companies = source, companies
        if settings.edgar_source == "live":  # search a local corpus while documents come from live EDGAR
            corpus = MirrorSource(settings.corpus_dir)
            corpus_companies = CompanyDirectory(corpus)
            await corpus_companies.load(attempts=1)
        full_text = LocalFullTextIndex(corpus, corpus_companies, corpus_companies.tickers())
        full_text.start_building()
    elif settings.edgar_search_mode == "live":
        full_text = LiveFullTextSearch(
            settings.sec_api_base_url, settings.sec_api_key.get_secret_value(),
            attempts=settings.max_retries, backoff_seconds=settings.retry_backoff_seconds,
        )
    web = None
    if settings.tavily_api_key is not None:
        web = TavilySearch(settings.tavily_api_key.get_secret_value(), settings.tavily_base_url,
                           backoff_seconds=settings.retry_backoff_seconds)
    return Services(
        settings=settings,
        store=store,
        companies=companies,
        filings=FilingTexts(source, companies, cache=cache, dump_root=settings.sec_dump_path),
        full_text=full_text,
        web=web,
        retriever=PassageRetriever(settings.retrieval_top_passages),
        grader=SubstringGrader(),
    )


def services(request: Request) -> Services:
    return request.app.state.services

"""What the routes work with, built once per ingress replica from the settings."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request

from deployments.observability.ray_metrics import ray_metrics
from deployments.settings import Settings
from finsec.corpus.generate import embedded_corpus_dir
from finsec.document_cache import DocumentCache, DocumentStoreClient
from finsec.edgar.cache import DiskCache
from finsec.edgar.companies import CompanyDirectory
from finsec.edgar.filing_text import DocumentUnavailable, FilingTexts, Page, PageFetcher
from finsec.edgar.live import LiveSource, RateLimiter
from finsec.edgar.source import EdgarSource, MirrorSource
from finsec.grading.deterministic import DeterministicGrader
from finsec.grading.grader import Grader
from finsec.grading.identity import GRADING_VERSION
from finsec.grading.judge import LlmJudge
from finsec.grounder import Grounder
from finsec.metrics import NO_METRICS, Metrics
from finsec.net.policy import FetchPolicy
from finsec.net.safe_fetch import FetchError
from finsec.retrieval.backends import ModelBackend, PassageBackend, RetrievalBackend
from finsec.retrieval.llm_retrieval import LlmRetrieval
from finsec.retrieval.passages import PassageRetriever
from finsec.tools.edgar_search import LiveFullTextSearch, LocalFullTextIndex
from finsec.tools.parse_page import PageParser
from finsec.tools.retrieve import Retriever
from finsec.tools.web_search import TavilySearch, WebSearchProvider
from finsec.verify import Verifier
from session_store import SessionStore, canonical_digest

__all__ = [
    "build_services",
    "edgar_source",
    "fetch_policy",
    "grader",
    "grading_key",
    "page_fetcher",
    "retrieval_backend",
    "Services",
    "services",
]


@dataclass
class Services:
    settings: Settings
    store: SessionStore
    companies: CompanyDirectory
    parser: PageParser
    retriever: Retriever
    verifier: Verifier
    full_text: LocalFullTextIndex | LiveFullTextSearch | None
    web: WebSearchProvider | None
    metrics: Metrics = NO_METRICS
    closing: list[Any] = field(default_factory=list)  # clients with aclose(), closed when the replica stops
    clock: Callable[[], float] = time.time  # this node's wall clock: a budget uses it only when no shard answers
    marks_kept_in: str | None = None  # where the marks are when not where the settings say (the one process's memory)

    async def aclose(self) -> None:
        for client in self.closing:
            await client.aclose()


def fetch_policy(settings: Settings, limiter: RateLimiter) -> FetchPolicy:
    """The one fetch policy (finsec/net/policy.py), from the settings."""
    return FetchPolicy(
        sec_base_urls=(settings.sec_www_base_url, settings.sec_data_base_url),
        page_hosts=settings.fetch_allowed_hosts,
        trusted_networks=settings.fetch_trusted_networks,
        max_bytes=settings.fetch_max_bytes,
        timeout_seconds=settings.request_timeout,
        user_agent=settings.user_agent,
        limiter=limiter,
    )


def edgar_source(settings: Settings, limiter: RateLimiter, metrics: Metrics = NO_METRICS) -> EdgarSource:
    """Live SEC through the guarded SEC fetcher, or a mirror folder; both under the same byte cap."""
    if settings.edgar_source == "live":
        return LiveSource(
            fetcher=fetch_policy(settings, limiter).sec_fetcher(),
            www_base_url=settings.sec_www_base_url,
            data_base_url=settings.sec_data_base_url,
            limiter=limiter,
            max_attempts=settings.max_retries,
            backoff_seconds=settings.retry_backoff_seconds,
            max_connections_per_host=settings.max_connections_per_host,
            metrics=metrics,
        )
    return MirrorSource(
        settings.corpus_dir or embedded_corpus_dir(), max_bytes=settings.fetch_max_bytes, metrics=metrics
    )


async def build_services(
    settings: Settings,
    store: SessionStore,
    limiter: RateLimiter,
    document_store: DocumentStoreClient,
    clock: Callable[[], float] = time.time,
    metrics: Metrics | None = None,
    marks_kept_in: str | None = None,
) -> Services:
    """Everything a replica needs; fails (and so the replica does) when the ticker registry cannot be loaded."""
    metrics = metrics or Metrics(settings.app_name, exporter=ray_metrics)
    source = edgar_source(settings, limiter, metrics)
    cache = DiskCache(settings.cache_dir) if settings.use_cache else None
    companies = CompanyDirectory(source, cache, settings.supplementary_tickers_fpath)
    await companies.load(
        attempts=5 if settings.edgar_source == "live" else 1, backoff_seconds=settings.retry_backoff_seconds
    )
    full_text: LocalFullTextIndex | LiveFullTextSearch | None = None
    if settings.edgar_search_mode == "local":
        corpus, corpus_companies = source, companies
        if settings.edgar_source == "live":  # search a local corpus while documents come from live EDGAR
            assert settings.corpus_dir is not None  # Settings' validator requires it here
            corpus = MirrorSource(settings.corpus_dir, max_bytes=settings.fetch_max_bytes)
            corpus_companies = CompanyDirectory(corpus)
            await corpus_companies.load(attempts=1)
        full_text = LocalFullTextIndex(corpus, corpus_companies, corpus_companies.tickers())
        full_text.start_building()
    elif settings.edgar_search_mode == "live":
        assert settings.sec_api_key is not None  # Settings' validator requires it here
        full_text = LiveFullTextSearch(
            settings.sec_api_base_url,
            settings.sec_api_key.get_secret_value(),
            attempts=settings.max_retries,
            backoff_seconds=settings.retry_backoff_seconds,
            metrics=metrics,
        )
    web = None
    if settings.tavily_api_key is not None:
        web = TavilySearch(
            settings.tavily_api_key.get_secret_value(),
            settings.tavily_base_url,
            backoff_seconds=settings.retry_backoff_seconds,
            metrics=metrics,
        )
    filings = FilingTexts(
        source,
        companies,
        cache=cache,
        dump_root=settings.sec_dump_path,
        dump_max_bytes=settings.fetch_max_bytes,
        fetch_page=page_fetcher(settings, limiter),
    )
    documents = DocumentCache(
        document_store,
        max_bytes=settings.replica_text_cache_bytes,
        grace_seconds=settings.document_grace_seconds,
        clock=clock,
        metrics=metrics,
    )
    retrieval = retrieval_backend(settings, metrics)
    judge = grader(settings, metrics)
    return Services(
        settings=settings,
        store=store,
        companies=companies,
        parser=PageParser(store, documents, filings, large_doc_threshold_chars=settings.large_doc_threshold_chars),
        retriever=Retriever(store, documents, filings, retrieval),
        verifier=Verifier(
            store,
            judge,
            judge_lease_seconds=settings.judge_lease_seconds,
            lease_seconds=_lease_seconds(settings),
            grading_key=grading_key(settings, judge),
            grounder=Grounder(store, documents, index_cache_bytes=settings.grounding_index_cache_bytes),
            require_grounded=settings.require_grounded_answer,
            metrics=metrics,
        ),
        full_text=full_text,
        web=web,
        metrics=metrics,
        closing=[c for c in (source, full_text, web, getattr(retrieval, "model", None), judge) if hasattr(c, "aclose")],
        clock=clock,
        marks_kept_in=marks_kept_in,
    )


def page_fetcher(settings: Settings, limiter: RateLimiter) -> PageFetcher:
    """parse_html_page on a URL that is not a filing document: SEC hosts and the configured allowlist only,
    never a private address (the guarded fetcher checks every hop); SEC hops count against the rate limit."""
    fetcher = fetch_policy(settings, limiter).page_fetcher()

    async def fetch(url: str) -> Page:
        try:
            page = await fetcher.fetch(url)
        except FetchError as error:
            raise DocumentUnavailable(str(error)) from error
        return Page(page.body, page.content_type, page.charset)

    return fetch


def retrieval_backend(settings: Settings, metrics: Metrics = NO_METRICS) -> RetrievalBackend:
    if settings.retrieval_model is None:
        return PassageBackend(
            PassageRetriever(settings.retrieval_top_passages, settings.retrieval_reply_chars),
            index_cache_bytes=settings.replica_index_cache_bytes,
            metrics=metrics,
        )
    options = (
        {"system_prompt_fpath": settings.retrieval_system_prompt_fpath}
        if settings.retrieval_system_prompt_fpath
        else {}
    )
    return ModelBackend(
        LlmRetrieval(
            settings.retrieval_model,
            system_prompt=settings.retrieval_system_prompt,
            responses_create_params=settings.retrieval_responses_create_params,
            max_output_tokens=settings.retrieval_max_output_tokens,
            call_timeout=settings.retrieval_call_timeout,
            metrics=metrics,
            **options,
        )
    )


def grader(settings: Settings, metrics: Metrics = NO_METRICS) -> Grader:
    if settings.judge_model is None:
        return DeterministicGrader(max_answer_chars=settings.max_answer_chars)
    options = (
        {"prompt_template_fpath": settings.judge_prompt_template_fpath} if settings.judge_prompt_template_fpath else {}
    )
    return LlmJudge(
        settings.judge_model,
        prompt_template=settings.judge_prompt_template,
        responses_create_params=settings.judge_responses_create_params,
        reward_mode=settings.reward_mode,
        call_timeout=settings.judge_call_timeout,
        retry_delays=settings.judge_retry_delays,
        metrics=metrics,
        **options,
    )


def _lease_seconds(settings: Settings) -> float | None:
    """One judgement's worst case, and a little for the shard calls around it."""
    budget = settings.judge_budget_seconds()
    return None if budget is None else budget + 2.0


def grading_key(settings: Settings, judge: Grader) -> str:
    """What a verdict depends on besides the verify body: the grader's code and every grading setting."""
    endpoint = settings.judge_model
    return canonical_digest(
        {  # the grading code's version is the one verify rows name (grading/identity.py)
            "grader": type(judge).__name__,
            "code": GRADING_VERSION,
            "reward_mode": settings.reward_mode,
            "judge": None if endpoint is None else endpoint.model_dump(mode="json", exclude={"api_key"}),
            "template": getattr(judge, "template", None),
            "params": settings.judge_responses_create_params,
            "require_grounded": settings.require_grounded_answer,
        }
    )


def services(request: Request) -> Services:
    return request.app.state.services

"""The one settings model (design principle 6).

`finsec serve configs/<file>.yaml` (or `serve deploy`) hands the config's `args` to the application builder, which
builds this model. Every field can also be set by an environment variable `FINSEC_<FIELD>` (for example
`FINSEC_CORPUS_DIR`), and the environment wins over the config file, so a shipped config can be pointed
at another corpus or endpoint without editing it.
"""

from __future__ import annotations

import logging
from datetime import date
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from finsec.llm.endpoint import ModelEndpoint
from session_store import Limits, ShardConfig

__all__ = ["MIN_SECRET_CHARS", "Settings"]

log = logging.getLogger(__name__)

MIN_SECRET_CHARS = 32  # cookie_secret and admin_token: a key, not a password (token_urlsafe(32) gives 43)
_UNSET_SECRET = {
    "cookie_secret": "a secret is generated and kept with the marks",
    "admin_token": "the retire route and the session inspector are off",
}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="FINSEC_", extra="forbid")

    app_name: str = Field("finsec", description="names the Ray namespace of the session-store actors")
    # sessions (contract §C, §H)
    num_shards: int = Field(
        8, ge=1, le=4096, description="session-store shard actors; fixed for the application's life"
    )
    durable_sessions: bool = Field(
        True,
        description="keep every open session's state (start, seed, documents by digest, verdicts) with the "
        "marks, so a shard that restarts restores its sessions instead of reporting them lost; false: they are "
        "reported lost (tools 404 session_lost, verify masked)",
    )
    session_ttl_seconds: float = Field(
        21600.0,
        gt=0,
        description="a session is evicted this long after its seed (§C.9); its verify is then masked session_expired",
    )
    fence_ttl_seconds: float | None = Field(None, gt=0, description="default: session_ttl_seconds (Decision 2)")
    reaper_interval_seconds: float = Field(
        30.0, gt=0, description="how often the reaper evicts what is past its TTL and sweeps unreferenced texts"
    )
    max_rollout_time_seconds: float | None = Field(None, ge=0, description="per-session tool time budget (§A.15)")
    # admission (deployments/http/admission.py): requests wait for a place by time, bounded by memory, never by a
    # small count, since most trainers' clients take a 503 as a lost rollout
    admission_running: int = Field(
        512,
        ge=1,
        le=4096,
        description="requests one replica (or the one process) works "
        "on at once; the others wait for a place, first come first served",
    )
    admission_wait_seconds: float = Field(
        60.0,
        gt=0,
        le=3600,
        description="a request that has waited this long for a place (its body's arrival "
        "included) gets 503 with Retry-After, unstarted; a slower body gets 408",
    )
    admission_waiting_bytes: int = Field(
        256_000_000,
        ge=1_000_000,
        description="memory the requests waiting on one replica may hold (their bodies "
        "and 32 KB each besides); past it a request gets 503 with Retry-After at once",
    )
    admission_retry_after_seconds: int = Field(5, ge=0, le=3600, description="the Retry-After of those 503s")
    # bounds on what sessions, shards and requests may hold; each breach is a clear error, never a crash
    max_request_bytes: int = Field(16_000_000, ge=1024, description="larger request bodies get 413")
    max_body_depth: int = Field(64, ge=8, description="deeper JSON nesting gets 422")
    max_documents_per_session: int = Field(
        64, ge=1, description="documents one session may store; past it parse_html_page says so"
    )
    max_session_chars: int = Field(200_000_000, ge=1, description="characters of text one session may store")
    max_verdicts_per_session: int = Field(16, ge=1, description="verdicts kept for identical re-sends")
    max_sessions_per_shard: int = Field(
        1_000_000, ge=1, description="open sessions one shard may hold; past it a seed gets 503 store_full"
    )
    max_agent_run_sessions_per_shard: int = Field(
        250_000,
        ge=1,
        description="agent-run sessions among a shard's open sessions: a client that drops its cookie seeds a new "
        "one each time; past it, an agent-run seed gets 503 store_full and episode seeds go on",
    )
    max_marks_per_shard: int = Field(4_000_000, ge=1, description="fences and expired marks one shard may hold")
    store_call_timeout_seconds: float = Field(10.0, gt=0, description="a shard call slower than this is a 503")
    shard_transport: Literal["direct", "ray"] = Field(
        "direct",
        description="direct: each replica keeps a TCP connection to each shard's node (on a port the "
        "shard picks); ray: batches as actor calls, which cost far more CPU (docs/benchmarks.md), where only "
        "Ray's own ports are open",
    )
    # where fences, expired marks, episode seeds and the generated cookie secret are kept durably
    mark_store_url: SecretStr | None = Field(
        None,
        description="redis://[:password@]host:port/db (rediss:// for TLS); unset: the Ray cluster's GCS "
        "key-value store, which is lost with the head unless the GCS is fault tolerant",
    )
    mark_store_durability_check: bool = Field(
        True,
        description="read the Redis's maxmemory-policy and persistence at deploy and every reaper tick, and "
        "refuse new sessions unless marks cannot be evicted (noeviction) and writes persist (appendonly yes). "
        "Turn off only for a Redis that persists and never evicts by other means; the marker check stays",
    )
    # the app's actors: a custom resource keeps shards, reaper and document store off the head node
    state_actor_resources: dict[str, float] = Field(default_factory=dict, description='e.g. {"finsec_state": 0.001}')
    state_nodes: int = Field(
        0,
        ge=0,
        description="the nodes offering state_actor_resources (KubeRay's state worker group): shards wait "
        "for that many to join and are placed an equal share a node, and each node holds a replica of no CPU so "
        "that Serve runs its HTTP proxy there, which KubeRay's readiness probe asks. 0: shards spread over the nodes "
        "that offer the resources at deploy",
    )
    admin_token: SecretStr | None = Field(
        None,
        description="enables POST /admin/retire_session_state and the live page's session inspector (Bearer), "
        f"and guards the live page's data; at least {MIN_SECRET_CHARS} characters",
    )
    stalled_after_seconds: float = Field(
        300.0,
        gt=0,
        description="an open session no stateful call names for this long is stalled: counted by the reaper "
        "(ray_finsec_stalled_sessions) and listed on the live page (/ui)",
    )
    # the session cookie (Decision 14)
    cookie_name: str = Field("finsec_session", description="the session cookie's name (§B.1)")
    cookie_secret: SecretStr | None = Field(
        None,
        description=f"signs session cookies; at least {MIN_SECRET_CHARS} characters. Unset (or empty): "
        "generated at start, kept with the marks and shared by replicas",
    )
    cookie_max_age_seconds: int = Field(
        14 * 24 * 3600,
        description="an older cookie is unreadable: its tools get a fresh session and its verify is masked",
    )
    # the tools over MCP at /mcp (the mcp extra; docs/recipes/mcp.md)
    mcp_session_idle_seconds: float = Field(
        1800.0,
        gt=0,
        le=6 * 24 * 3600,
        description="an MCP session idle this long ends, releasing the agent-run session it seeded",
    )
    mcp_max_sessions: int = Field(10_000, ge=1, description="MCP sessions a replica holds; past it a new one gets 503")
    # where EDGAR data comes from (contract §F): the embedded corpus, a mirror folder, or live SEC
    edgar_source: Literal["embedded", "mirror", "live"] = Field(
        "embedded",
        description="where filings come from: the embedded corpus (offline), a sec.gov-layout folder "
        "(corpus_dir), or live EDGAR at the two base URLs",
    )
    corpus_dir: Path | None = Field(None, description="a folder in the sec.gov URL layout; implies edgar_source=mirror")
    sec_www_base_url: str = Field("https://www.sec.gov", description="live EDGAR's filings and tickers (or a mirror)")
    sec_data_base_url: str = Field("https://data.sec.gov", description="live EDGAR's submissions API (or a mirror)")
    user_agent: str = Field(
        "finsec-serve/0.1 (set user_agent to your name and contact email)",
        description="SEC refuses requests without a descriptive User-Agent with contact details",
    )
    requests_per_second: int = Field(10, ge=1, description="EDGAR requests per second for the whole application")
    rate_limit_window_seconds: float = Field(
        1.25, gt=0, description="requests_per_second are spread over this; over 1 s absorbs arrival jitter"
    )
    request_timeout: float = Field(30.0, gt=0, description="seconds one EDGAR or page request may take")
    max_retries: int = Field(3, ge=1, description="attempts per EDGAR request (403/429/503 and transport errors)")
    retry_backoff_seconds: float = Field(1.0, ge=0, description="retries sleep this times 2^attempt")
    max_connections_per_host: int = Field(10, ge=1, description="connections each replica opens to one EDGAR host")
    use_cache: bool = Field(False, description="keep fetched filings and metadata in cache_dir (§F.4)")
    cache_dir: Path = Field(Path("~/.cache/finsec-serve/sec"), description="the disk cache, when use_cache is on")
    sec_dump_path: Path | None = Field(
        None, description="a folder of filings' primary documents, read before fetching (§F.5 b)"
    )
    supplementary_tickers_fpath: Path | None = Field(
        None, description="a JSON file of extra tickers (company_tickers.json's shape) beside the registry's"
    )
    max_filing_results: int = Field(200, ge=1, description="sec_filing_search lists at most this many filings")
    max_end_date: date | None = Field(None, description="clamps every date-filtered tool (Decision 9)")
    # edgar_search (contract §A.7)
    edgar_search_mode: Literal["local", "live"] | None = Field(
        "local",
        description="edgar_search over the corpus folder (local), through sec-api.io (live, needs "
        'sec_api_key), or off (null, or "off" in a variable)',
    )
    sec_api_key: SecretStr | None = Field(None, description="sec-api.io's key, for edgar_search_mode live")
    sec_api_base_url: str = Field("https://api.sec-api.io", description="sec-api.io's full-text search API")
    # parse_html_page on non-SEC URLs: only these hosts, and never a private address
    fetch_allowed_hosts: list[str] = Field(
        default_factory=list,
        description="hosts parse_html_page may fetch besides SEC's (exact names, or *.example.com)",
    )
    fetch_max_bytes: int = Field(20_000_000, ge=1, description="a page or filing larger than this is refused")
    fetch_trusted_networks: list[str] = Field(
        default_factory=list,
        description="CIDRs (e.g. 10.8.0.5/32) that the SEC and page fetchers may contact although they are "
        "private or loopback: only for a private EDGAR mirror (set sec_www_base_url/sec_data_base_url to it) "
        "and for tests' loopback servers. Empty in production. Hosts must still be allowed; keep it narrow.",
    )
    # web_search (contract §A.11)
    tavily_api_key: SecretStr | None = Field(None, description="enables web_search (Tavily); unset, it is not offered")
    tavily_base_url: str = Field("https://api.tavily.com", description="Tavily's search API")
    # documents and retrieve_information: a model endpoint, or (unset) the embedded BM25 passages (§E)
    large_doc_threshold_chars: int = Field(
        100_000, ge=1, description="a retrieval model reads a longer document in chunks (Decision 12)"
    )
    document_store_bytes: int = Field(4_000_000_000, ge=1_000_000, description="the app-wide store of texts")
    document_grace_seconds: float = Field(60.0, gt=0, description="an unreferenced text is kept this long")
    replica_text_cache_bytes: int = Field(256_000_000, ge=0, description="texts each replica keeps, by digest")
    replica_index_cache_bytes: int = Field(512_000_000, ge=0, description="BM25 indexes kept per replica")
    retrieval_top_passages: int = Field(24, ge=1, le=100, description="embedded backend: most passages in a reply")
    retrieval_reply_chars: int = Field(7_600, ge=500, description="embedded backend: passages fill this budget")
    retrieval_model: ModelEndpoint | None = Field(
        None,
        description="the model retrieve_information asks (base_url, api, model, api_key; JSON in a variable); "
        "unset: the embedded BM25 passages",
    )
    retrieval_responses_create_params: dict | None = Field(None, description="extra create params of its calls")
    retrieval_system_prompt: str | None = Field(None, description="its system prompt (default: the stock one, §E.2)")
    retrieval_system_prompt_fpath: Path | None = Field(None, description="its system prompt, from a file")
    retrieval_max_output_tokens: int | None = Field(None, description="caps each retrieval reply's tokens")
    retrieval_call_timeout: float | None = Field(300.0, gt=0, description="bounds one retrieval model call")
    # grading in /verify: an LLM judge, or (unset) the embedded deterministic grader (§D)
    judge_model: ModelEndpoint | None = Field(
        None, description="the LLM judge /verify asks (JSON in a variable); unset: the deterministic grader (§D.3)"
    )
    judge_responses_create_params: dict | None = Field(None, description="extra create params of its calls")
    judge_prompt_template: str | None = Field(None, description="its prompt template (default: the stock one, §D.4)")
    judge_prompt_template_fpath: Path | None = Field(None, description="its prompt template, from a file")
    judge_call_timeout: float | None = Field(60.0, gt=0, description="bounds one judge call; needed with judge_model")
    judge_retry_delays: list[float] = Field([1.0, 2.0], description="sleeps between the judge's attempts")
    reward_mode: Literal["binary", "scaled"] = Field(
        "binary", description="the judge's rating 0, 1, 2 as a reward: binary 0, 0, 1; scaled 0, 0.5, 1"
    )
    max_answer_chars: int = Field(
        4_000,
        ge=100,
        description="deterministic grader: a longer answer gets 0 with "
        "failure_kind answer_too_long, unread (an answer is a statement, not a document)",
    )
    # grounding in /verify: do the answer's figures appear in the documents the session stored (grading/grounding.py)
    require_grounded_answer: bool = Field(
        False,
        description="an answer whose figures appear in none of the session's documents gets 0 with "
        "failure_kind ungrounded, ungraded (the judge is not asked): a policy cannot be rewarded for a guess",
    )
    grounding_index_cache_bytes: int = Field(
        64_000_000,
        ge=0,
        description="the numbers of document texts, indexed once per text for grounding and kept per replica",
    )
    judge_lease_seconds: float = Field(
        300.0,
        gt=0,
        description="identical verifies wait at most this long for one judge; at least one judge's "
        "worst case (judge_call_timeout x attempts + retry delays), which is also when a dead judge's lease lapses",
    )

    def judge_budget_seconds(self) -> float | None:
        """The longest one judgement can take: every attempt timing out, with the sleeps between them."""
        if self.judge_model is None or self.judge_call_timeout is None:
            return None
        return self.judge_call_timeout * (len(self.judge_retry_delays) + 1) + sum(self.judge_retry_delays)

    def mark_store(self) -> str | None:
        return self.mark_store_url.get_secret_value() if self.mark_store_url else None

    def shard_config(self) -> ShardConfig:
        return ShardConfig(
            self.session_ttl_seconds,
            self.fence_ttl_seconds,
            self.limits(),
            self.mark_store_durability_check,
            self.durable_sessions,
        )

    def limits(self) -> Limits:
        return Limits(
            documents_per_session=self.max_documents_per_session,
            chars_per_session=self.max_session_chars,
            verdicts_per_session=self.max_verdicts_per_session,
            sessions=self.max_sessions_per_shard,
            marks=self.max_marks_per_shard,
            agent_run_sessions=self.max_agent_run_sessions_per_shard,
        )

    @classmethod
    def settings_customise_sources(
        cls, settings_cls, init_settings, env_settings, dotenv_settings, file_secret_settings
    ):
        return env_settings, init_settings  # the environment overrides the config file's args

    @field_validator("cookie_secret", "admin_token")
    @classmethod
    def _secret(cls, value: SecretStr | None, info) -> SecretStr | None:
        """An empty secret is unset, never a key: a Kubernetes Secret mapped with `optional: true` gives "" for
        an empty entry. A short one is an error: a cookie signed with a guessable key can be forged."""
        if value is None:
            return None
        secret = value.get_secret_value()
        if not secret.strip():
            log.warning("%s is empty: treated as unset (%s)", info.field_name, _UNSET_SECRET[info.field_name])
            return None
        if len(secret) < MIN_SECRET_CHARS:
            raise ValueError(
                f"{info.field_name} has {len(secret)} characters; it needs at least {MIN_SECRET_CHARS} random ones "
                "(python -c 'import secrets; print(secrets.token_urlsafe(32))'), or leave it unset"
            )
        return value

    @field_validator("edgar_search_mode", mode="before")
    @classmethod
    def _search_off(cls, mode):
        """`null` in a config; "off" (or "none", "null", "") where only a string can be written: the environment."""
        return None if isinstance(mode, str) and mode.strip().lower() in ("", "off", "none", "null") else mode

    @field_validator(
        "corpus_dir",
        "cache_dir",
        "sec_dump_path",
        "supplementary_tickers_fpath",
        "retrieval_system_prompt_fpath",
        "judge_prompt_template_fpath",
    )
    @classmethod
    def _absolute(cls, path: Path | None) -> Path | None:
        """Resolved where the config is read: replicas run in other working directories."""
        return None if path is None else path.expanduser().resolve()

    @model_validator(mode="after")
    def _defaults_and_consistency(self) -> Settings:
        if self.fence_ttl_seconds is None:
            self.fence_ttl_seconds = self.session_ttl_seconds
        if self.judge_model is not None and self.judge_call_timeout is None:
            raise ValueError(
                "judge_model needs a judge_call_timeout: without one a stalled judge holds its "
                "verify's lease, and its twins, forever"
            )
        budget = self.judge_budget_seconds()
        if budget is not None and self.judge_lease_seconds < budget:
            raise ValueError(
                f"judge_lease_seconds ({self.judge_lease_seconds:g}) is shorter than one judgement's worst case: "
                f"judge_call_timeout {self.judge_call_timeout:g} s x {len(self.judge_retry_delays) + 1} attempts + "
                f"{sum(self.judge_retry_delays):g} s of judge_retry_delays = {budget:g} s. Raise "
                "judge_lease_seconds, or lower judge_call_timeout or the retries."
            )
        if self.state_nodes and not self.state_actor_resources:
            raise ValueError(
                "state_nodes counts the nodes that offer state_actor_resources: set those too (e.g. "
                '{"finsec_state": 0.01}), or every node, the head included, would count'
            )
        url = self.mark_store_url.get_secret_value() if self.mark_store_url else ""
        if url and not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("mark_store_url must be a redis://, rediss:// or unix:// URL (or unset for the GCS)")
        if self.corpus_dir is not None and self.edgar_source == "embedded":
            self.edgar_source = "mirror"
        if self.edgar_source == "mirror" and self.corpus_dir is None:
            raise ValueError("edgar_source 'mirror' needs corpus_dir: a folder in the sec.gov URL layout")
        if self.edgar_search_mode == "live" and self.sec_api_key is None:
            raise ValueError("edgar_search_mode 'live' needs sec_api_key (or set edgar_search_mode to 'local' or null)")
        if self.edgar_search_mode == "local" and self.edgar_source == "live" and self.corpus_dir is None:
            raise ValueError(
                "edgar_search_mode 'local' searches a corpus folder: with edgar_source 'live' set corpus_dir, "
                "or use edgar_search_mode 'live' (with sec_api_key) or null"
            )
        return self

"""The one settings model (design principle 6).

`serve run configs/<file>.yaml` hands the config's `args` to the application builder, which builds this
model. Every field can also be set by an environment variable `FINSEC_<FIELD>` (for example
`FINSEC_CORPUS_DIR`), and the environment wins over the config file, so a shipped config can be pointed
at another corpus or endpoint without editing it.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="FINSEC_", extra="forbid")

    app_name: str = Field("finsec", description="names the Ray namespace of the session-store actors")
    # sessions (contract §C, §H)
    num_shards: int = Field(8, ge=1, description="session-store shard actors; fixed for the application's life")
    session_ttl_seconds: float = Field(21600.0, gt=0)
    fence_ttl_seconds: float | None = Field(None, gt=0, description="default: session_ttl_seconds (Decision 2)")
    reaper_interval_seconds: float = Field(30.0, gt=0)
    max_rollout_time_seconds: float | None = Field(None, ge=0, description="per-session tool time budget (§A.15)")
    # the session cookie (Decision 14)
    cookie_name: str = "finsec_session"
    cookie_secret: SecretStr | None = Field(None, description="generated at start when unset; shared by replicas")
    cookie_max_age_seconds: int = 14 * 24 * 3600
    # documents
    corpus_dir: Path | None = Field(None, description="a folder in the sec.gov URL layout; default: embedded")
    large_doc_threshold_chars: int = Field(100_000, ge=1)
    retrieval_top_passages: int = Field(8, ge=1, le=100)

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings, file_secret_settings):
        return env_settings, init_settings  # the environment overrides the config file's args

    @model_validator(mode="after")
    def _fence_defaults_to_session_ttl(self) -> "Settings":
        if self.fence_ttl_seconds is None:
            self.fence_ttl_seconds = self.session_ttl_seconds
        return self

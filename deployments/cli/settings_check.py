"""The Settings a serve config's `args` and the environment's FINSEC_<FIELD> variables make, checked the way a new
user needs: every mistake at once, each naming where it was made (the file's key or the variable) and what to
change; then the folders and files they name, and, when asked, whether the stores and endpoints they name answer.

Settings (pydantic-settings) would stop at the first variable it cannot parse, blame the file for a bad variable,
and ignore a misspelt one; here the variables are read first, each on its own, and the values validated together."""

from __future__ import annotations

import functools
import json
import os
import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from finsec_client.cli.usage import did_you_mean

__all__ = [
    "checked_settings",
    "ENV_PREFIX",
    "explain",
    "OTHER_VARIABLES",
    "reach_problems",
    "REACH_TIMEOUT_SECONDS",
    "reference_markdown",
    "Sources",
]

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

    from deployments.settings import Settings

ENV_PREFIX = "FINSEC_"
# FINSEC_ variables that are not settings: the CLI's default server and where a local cluster's HAProxy lives.
OTHER_VARIABLES = {"FINSEC_URL", "FINSEC_HAPROXY_DIR"}
REACH_TIMEOUT_SECONDS = 2.0
_JSON_TYPES = ("dict_type", "list_type", "model_type", "model_attributes_type", "set_type")


class Sources:
    """Where each setting's value came from, for messages: the variable when one is set, else the file's key."""

    def __init__(self, args: dict[str, Any], variables: dict[str, str]):
        self.args = args
        self.variables = variables  # field -> the variable's name

    def of(self, field: str, *rest: Any) -> str:
        if field in self.variables:
            return f"environment variable {self.variables[field]}"
        return "args." + ".".join(str(part) for part in (field, *rest)) if field else "args"


def checked_settings(args: dict[str, Any]) -> tuple[Settings | None, Sources, list[str]]:
    """The settings, where they are sound, and every problem found, one line each."""
    from deployments.settings import Settings

    fields = Settings.model_fields
    problems: list[str] = []
    values = dict(args)
    variables: dict[str, str] = {}
    for name, raw in sorted(os.environ.items()):
        if not name.upper().startswith(ENV_PREFIX) or name.upper() in OTHER_VARIABLES:
            continue
        field = name[len(ENV_PREFIX) :].lower()
        if field not in fields:
            problems.append(
                f"environment variable {name} is not a setting"
                f"{did_you_mean(field, fields, lambda known: ENV_PREFIX + known.upper())}"
            )
            continue
        variables[field] = name
        values[field] = _decoded(raw)
    sources = Sources(args, variables)
    problems += _path_problems(values, sources)
    try:
        settings = _given()(**values)
    except ValidationError as error:
        return None, sources, problems + [_problem(e, sources) for e in error.errors(include_url=False)]
    return (None if problems else settings), sources, problems


def reach_problems(settings: Settings, sources: Sources) -> list[str]:
    """The stores and endpoints the settings name that do not answer within a short timeout, checked at once."""
    checks: list[tuple[str, Callable[[], str | None]]] = []
    if settings.mark_store_url is not None:
        url = settings.mark_store_url.get_secret_value()
        checks.append((sources.of("mark_store_url"), lambda: _redis_answers(url)))
    for field in ("retrieval_model", "judge_model"):
        endpoint = getattr(settings, field)
        if endpoint is not None:
            checks.append((sources.of(field, "base_url"), functools.partial(_connects, endpoint.base_url)))
    if settings.edgar_source == "live":
        for field in ("sec_www_base_url", "sec_data_base_url"):
            checks.append((sources.of(field), functools.partial(_connects, getattr(settings, field))))
    with ThreadPoolExecutor(max_workers=max(1, len(checks))) as pool:
        answers = list(pool.map(lambda check: check[1](), checks))
    return [f"{where}: {answer}" for (where, _), answer in zip(checks, answers, strict=False) if answer]


def explain() -> list[str]:
    """Every setting: its name, the variable that sets it, its default and what it does."""
    return [
        f"{name}  ({variable}; default {default})\n    {meaning}" for name, variable, default, meaning in _reference()
    ]


def reference_markdown() -> str:
    """The same, as the table docs/configuration.md holds (a test keeps the two equal)."""
    rows = ["| setting | variable | default | what it does |", "|---|---|---|---|"]
    rows += [
        f"| `{name}` | `{variable}` | `{default}` | {_cell(meaning)} |"
        for name, variable, default, meaning in _reference()
    ]
    return "\n".join(rows) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _reference() -> list[tuple[str, str, str, str]]:
    from deployments.settings import Settings

    return [
        (
            name,
            f"{ENV_PREFIX}{name.upper()}",
            "required" if field.is_required() else _shown(field.get_default(call_default_factory=True)),
            field.description or "",
        )
        for name, field in Settings.model_fields.items()
    ]


@functools.cache
def _given() -> type[Settings]:
    from deployments.settings import Settings

    class Given(Settings):
        """Settings from the values given only: the environment was read above, each variable on its own."""

        @classmethod
        def settings_customise_sources(
            cls, settings_cls, init_settings, env_settings, dotenv_settings, file_secret_settings
        ):
            return (init_settings,)

    return Given


def _decoded(raw: str) -> Any:
    """A variable's value as pydantic-settings reads it: JSON when it is an object or an array, else the text."""
    if raw.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _problem(error: ErrorDetails, sources: Sources) -> str:
    loc = [str(part) for part in error.get("loc", ())]
    message = str(error.get("msg", "")).removeprefix("Value error, ")
    if error.get("type") == "extra_forbidden":
        from deployments.settings import Settings

        return f"args.{'.'.join(loc)} is not a setting{did_you_mean(loc[0], Settings.model_fields)}"
    where = sources.of(*loc) if loc else "settings"
    if loc and loc[0] in sources.variables and error.get("type") in _JSON_TYPES:
        message += " (a variable gives it as JSON, e.g. '{\"key\": 1}' or '[\"a\"]')"
    return f"{where}: {message}"


def _path_problems(values: dict[str, Any], sources: Sources) -> list[str]:
    """The folders and files the values name, read as given (so a path is checked even when another value is
    wrong, and resolved from here, as Settings resolves it)."""

    def given(field: str) -> Path | None:
        value = values.get(field)
        return Path(value).expanduser().resolve() if isinstance(value, (str, Path)) and str(value) else None

    problems = []
    corpus = given("corpus_dir")
    if corpus is not None and not (corpus / "files" / "company_tickers.json").is_file():
        what = "does not exist" if not corpus.exists() else "has no files/company_tickers.json"
        problems.append(
            f"{sources.of('corpus_dir')}: {corpus} {what}: corpus_dir is a folder in the sec.gov URL "
            "layout (`finsec corpus write DIR` makes one)"
        )
    dump = given("sec_dump_path")
    if dump is not None and not dump.is_dir():
        problems.append(f"{sources.of('sec_dump_path')}: {dump} is not a folder")
    for field in ("supplementary_tickers_fpath", "retrieval_system_prompt_fpath", "judge_prompt_template_fpath"):
        path = given(field)
        if path is not None and not path.is_file():
            problems.append(f"{sources.of(field)}: {path} is not a file")
    return problems


def _connects(url: str) -> str | None:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=REACH_TIMEOUT_SECONDS):
            return None
    except OSError as error:
        return f"nothing answers at {parts.hostname}:{port} ({error.strerror or type(error).__name__})"


def _redis_answers(url: str) -> str | None:
    import redis

    client = redis.Redis.from_url(
        url, socket_connect_timeout=REACH_TIMEOUT_SECONDS, socket_timeout=REACH_TIMEOUT_SECONDS
    )
    try:
        client.ping()
        return None
    except redis.RedisError as error:
        return f"the Redis does not answer ({' '.join(str(error).split())[:200]})"
    finally:
        client.close()


def _shown(value: Any) -> str:
    if hasattr(value, "get_secret_value"):
        return "set"
    return json.dumps(value, default=str) if not isinstance(value, str) else repr(value)

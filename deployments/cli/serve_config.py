"""A serve config (configs/serve.yaml) read the way `finsec serve` deploys it, and checked before Ray starts:
the file must validate as Serve's own ServeDeploySchema with no key it would drop, and its application's `args`,
with FINSEC_<FIELD> in the environment overriding them, as Settings (deployments/cli/settings_check.py). Every
mistake is reported at once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from finsec_client.cli.usage import UsageError, did_you_mean, one_line

__all__ = [
    "ConfigErrors",
    "describe_corpus",
    "INGRESS_DEPLOYMENT",
    "load_serve_config",
    "packaged_config",
    "ServeTarget",
]

if TYPE_CHECKING:  # the server's settings are loaded when a config is read, never by the command line itself
    from pydantic_core import ErrorDetails

    from deployments.settings import Settings

INGRESS_DEPLOYMENT = "FinsecIngress"


def packaged_config(name: str = "serve.yaml") -> Path:
    """A serve config the project ships: `configs/` of a checkout, which the wheel carries as `deployments/configs`
    (pyproject.toml), so that `finsec serve` works from any folder."""
    from importlib.resources import files

    packaged = Path(str(files("deployments"))) / "configs" / name
    return packaged if packaged.is_file() else Path(__file__).resolve().parents[2] / "configs" / name


@dataclass(frozen=True)
class ServeTarget:
    settings: Settings
    app_name: str  # the Serve application's name
    route_prefix: str
    deployment_options: dict[str, Any]  # for FinsecIngress.options(...): replicas or autoscaling, resources
    host: str
    port: int


class ConfigErrors(UsageError):
    """Every mistake found in a serve config and the environment, one line each."""

    def __init__(self, path: Path, problems: list[str]):
        super().__init__("\n".join(one_line(f"config {path}: {problem}") for problem in problems))
        self.problems = problems


def load_serve_config(path: Path, *, reach: bool = False) -> ServeTarget:
    """The config's target, or ConfigErrors naming every mistake at once. With `reach`, the stores and endpoints
    the settings name must also answer (a short timeout each)."""
    from ray.serve.schema import ServeDeploySchema

    from deployments.cli.settings_check import checked_settings, reach_problems

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"config {path} does not exist")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise UsageError(f"config {path} is not YAML: {one_line(str(error))}") from None
    if not isinstance(raw, dict):
        raise UsageError(f"config {path} is not a serve config (a mapping with `applications:`)")
    problems = _unknown_keys(raw)
    try:
        config = ServeDeploySchema.model_validate(raw)
    except ValidationError as error:
        raise ConfigErrors(path, problems + _located(error.errors(include_url=False))) from None
    if len(config.applications) != 1:
        raise ConfigErrors(path, [*problems, f"must hold one application, not {len(config.applications)}"])
    app = config.applications[0]
    if app.route_prefix is not None and not app.route_prefix.startswith("/"):
        problems.append(f"route_prefix {app.route_prefix!r} must start with '/'")
    if not app.import_path.startswith("deployments.builder:"):
        problems.append(f"import_path {app.import_path!r} is not finsec-serve's (deployments.builder:build_app)")
    options: dict[str, Any] = {}
    for deployment in app.deployments:
        if deployment.name != INGRESS_DEPLOYMENT:
            problems.append(f"unknown deployment {deployment.name!r} (only {INGRESS_DEPLOYMENT})")
        options = {k: v for k, v in deployment.model_dump(exclude_unset=True).items() if k != "name"}
    if app.logging_config is not None and "logging_config" not in options:  # the application's, for its replicas
        options["logging_config"] = app.logging_config.model_dump(exclude_unset=True)
    settings, sources, settings_problems = checked_settings(app.args or {})
    problems += settings_problems
    if settings is not None:
        problems += _admission_problems(options, settings)
    if settings is not None and reach:
        problems += reach_problems(settings, sources)
    if problems or settings is None:
        raise ConfigErrors(path, problems)
    http = config.http_options
    return ServeTarget(
        settings, app.name, app.route_prefix or "/", options, http.host or "127.0.0.1", http.port or 8000
    )


def _admission_problems(options: dict[str, Any], settings: Settings) -> list[str]:
    """FinsecIngress options that would refuse or hold requests before the app's admission can time their wait."""
    from deployments.http.admission import Admission

    where = f"{INGRESS_DEPLOYMENT}."
    problems = []
    if options.get("max_queued_requests", -1) != -1:
        problems.append(
            f"{where}max_queued_requests: Serve would refuse requests at once that admission lets wait "
            "(admission_wait_seconds); leave it out"
        )
    if "backpressure_config" in options:
        problems.append(f"{where}backpressure_config: the app's 503s take admission_retry_after_seconds; leave it out")
    held = Admission.from_settings(settings).most_held()
    if options.get("max_ongoing_requests", held) < held:
        problems.append(
            f"{where}max_ongoing_requests {options['max_ongoing_requests']}: Serve would hold the rest "
            f"in its own queue, untimed; leave it out (the app takes {held:,}) or set admission_running"
        )
    return problems


def _unknown_keys(raw: dict[str, Any]) -> list[str]:
    """Keys Serve's schema would drop without a word (it ignores what it does not know): a misspelt
    `num_replica: 2` deploys one replica."""
    from ray.serve.schema import DeploymentSchema, HTTPOptionsSchema, ServeApplicationSchema, ServeDeploySchema

    found = _unknown(raw, ServeDeploySchema, "")
    if isinstance(raw.get("http_options"), dict):
        found += _unknown(raw["http_options"], HTTPOptionsSchema, "http_options.")
    for i, app in enumerate(raw.get("applications") or []):
        if not isinstance(app, dict):
            continue
        found += _unknown(app, ServeApplicationSchema, f"applications[{i}].")
        for j, deployment in enumerate(app.get("deployments") or []):
            if isinstance(deployment, dict):
                found += _unknown(deployment, DeploymentSchema, f"applications[{i}].deployments[{j}].")
    return found


def _unknown(section: dict[str, Any], schema: Any, where: str) -> list[str]:
    known = set(schema.model_fields) | {f.alias for f in schema.model_fields.values() if f.alias}
    problems = []
    for key in section:
        if key not in known:
            problems.append(
                f"{where}{key} is not a {schema.__name__.removesuffix('Schema')} key{did_you_mean(str(key), known)}"
            )
    return problems


def _located(errors: list[ErrorDetails]) -> list[str]:
    """Serve's schema errors, one line per value: a union's alternatives (num_replicas: an int, or "auto") come
    as one error each, with the alternative last in their location."""
    by_value: dict[tuple[str, ...], list[str]] = {}
    for error in errors:
        loc = tuple(str(p) for p in error.get("loc", ()))
        key = loc[:-1] if len(loc) > 1 and _union_tag(loc[-1]) else loc
        by_value.setdefault(key, []).append(str(error.get("msg", "")))
    return [
        f"{'.'.join(loc) or 'config'}: {', or '.join(dict.fromkeys(messages))}" for loc, messages in by_value.items()
    ]


def _union_tag(part: str) -> bool:
    """A union alternative's name in a location ("int", "constrained-int", "literal['auto']"), not a key."""
    return not part.isidentifier() and not part.isdigit() or part in ("int", "str", "float", "bool", "none")


def describe_corpus(settings: Settings) -> str:
    """Where documents come from, in words."""
    if settings.edgar_source == "live":
        return f"live EDGAR at {settings.sec_www_base_url} and {settings.sec_data_base_url}"
    if settings.edgar_source == "mirror":
        return f"the folder {settings.corpus_dir}"
    from finsec.corpus.generate import embedded_corpus_dir

    return f"the embedded corpus ({embedded_corpus_dir()})"

"""A serve config (configs/serve.yaml) read the way `finsec serve` deploys it, and checked before Ray starts:
the file must validate as Serve's own ServeDeploySchema, and its application's `args` as Settings (with
FINSEC_<FIELD> in the environment overriding them, as Settings does)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from finsec_client.cli.usage import UsageError, one_line

if TYPE_CHECKING:  # the server's settings are loaded when a config is read, never by the command line itself
    from deployments.settings import Settings

INGRESS_DEPLOYMENT = "FinsecIngress"


def packaged_config(name: str = "serve.yaml") -> Path:
    """A serve config the package ships (`configs/` in the repository): `finsec serve` works from any folder."""
    from importlib.resources import files

    return Path(str(files("deployments") / "configs" / name))


@dataclass(frozen=True)
class ServeTarget:
    settings: Settings
    app_name: str  # the Serve application's name
    route_prefix: str
    deployment_options: dict[str, Any]  # for FinsecIngress.options(...): replicas or autoscaling, resources
    host: str
    port: int


def load_serve_config(path: Path) -> ServeTarget:
    from ray.serve.schema import ServeDeploySchema

    from deployments.settings import Settings

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"config {path} does not exist")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise UsageError(f"config {path} is not YAML: {one_line(str(error))}") from None
    if not isinstance(raw, dict):
        raise UsageError(f"config {path} is not a serve config (a mapping with `applications:`)")
    try:
        config = ServeDeploySchema.model_validate(raw)
    except ValidationError as error:
        raise UsageError(f"config {path} is not a valid serve config: {_first_error(error)}") from None
    if len(config.applications) != 1:
        raise UsageError(f"config {path} must hold one application, not {len(config.applications)}")
    app = config.applications[0]
    if app.route_prefix is not None and not app.route_prefix.startswith("/"):
        raise UsageError(f"config {path}: route_prefix {app.route_prefix!r} must start with '/'")
    if not app.import_path.startswith("deployments.builder:"):
        raise UsageError(f"config {path}: import_path {app.import_path!r} is not finsec-serve's "
                         "(deployments.builder:build_app)")
    try:
        settings = Settings(**(app.args or {}))
    except ValidationError as error:
        raise UsageError(f"config {path}: args are not valid settings: {_first_error(error)}") from None
    options: dict[str, Any] = {}
    for deployment in app.deployments:
        if deployment.name != INGRESS_DEPLOYMENT:
            raise UsageError(f"config {path}: unknown deployment {deployment.name!r} (only {INGRESS_DEPLOYMENT})")
        options = {k: v for k, v in deployment.model_dump(exclude_unset=True).items() if k != "name"}
    if app.logging_config is not None and "logging_config" not in options:  # the application's, for its replicas
        options["logging_config"] = app.logging_config.model_dump(exclude_unset=True)
    http = config.http_options
    return ServeTarget(settings, app.name, app.route_prefix or "/", options, http.host or "127.0.0.1",
                       http.port or 8000)


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "config"
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return one_line(f"{where}: {first.get('msg', '')}{more}")


def describe_corpus(settings: Settings) -> str:
    """Where documents come from, in words."""
    if settings.edgar_source == "live":
        return f"live EDGAR at {settings.sec_www_base_url} and {settings.sec_data_base_url}"
    if settings.edgar_source == "mirror":
        return f"the folder {settings.corpus_dir}"
    from finsec.corpus.generate import embedded_corpus_dir

    return f"the embedded corpus ({embedded_corpus_dir()})"

"""The shipped serve configs are valid Serve configs whose args are valid settings (design principle 6)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError
from ray.serve.schema import ServeDeploySchema

from deployments.builder import build_app
from deployments.inprocess import in_process_app
from deployments.settings import Settings

CONFIGS = sorted((Path(__file__).parents[3] / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_config_is_a_valid_serve_config_for_our_builder(path):
    config = ServeDeploySchema.model_validate(yaml.safe_load(path.read_text()))
    (app,) = config.applications
    assert app.import_path == "deployments.builder:build_app"
    Settings(**app.args)  # every arg is a settings field (extra keys are refused)
    assert build_app(app.args) is not None
    assert [d.name for d in app.deployments] == ["FinsecIngress"]


def test_unknown_setting_is_refused_with_its_name():
    with pytest.raises(ValidationError, match="num_shardz"):
        Settings(num_shardz=3)


def test_environment_overrides_config_args(monkeypatch):
    monkeypatch.setenv("FINSEC_NUM_SHARDS", "3")
    monkeypatch.setenv("FINSEC_CORPUS_DIR", "/data/mirror")
    settings = Settings(num_shards=8, corpus_dir="/elsewhere")
    assert settings.num_shards == 3 and str(settings.corpus_dir) == "/data/mirror"


def test_paths_are_resolved_where_the_config_is_read(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    settings = Settings(corpus_dir="mirror", cache_dir="~/sec-cache")
    assert settings.corpus_dir == tmp_path / "mirror" and settings.cache_dir.is_absolute()
    assert "~" not in str(settings.cache_dir)


@pytest.mark.parametrize("name", ["cookie_secret", "admin_token"])
def test_an_empty_secret_is_unset_and_a_short_one_refused(name, monkeypatch, caplog):
    """A Kubernetes Secret mapped with `optional: true` gives "" for an empty key: never a signing key."""
    for empty in ("", "   "):
        monkeypatch.setenv(f"FINSEC_{name.upper()}", empty)
        assert getattr(Settings(), name) is None
        assert f"{name} is empty: treated as unset" in caplog.text
    monkeypatch.delenv(f"FINSEC_{name.upper()}")
    with pytest.raises(ValidationError, match=f"{name} has 31 characters; it needs at least 32"):
        Settings(**{name: "x" * 31})
    assert getattr(Settings(**{name: "x" * 32}), name).get_secret_value() == "x" * 32


def test_no_app_signs_cookies_with_a_short_key():
    with pytest.raises(ValueError, match="at least 32"):
        in_process_app(Settings(app_name="short-key", num_shards=1), cookie_secret="in-process-secret")
    generated = in_process_app(Settings(app_name="no-key", num_shards=1))  # none given: a random one, not a constant
    assert generated.api is not None


def test_fence_ttl_defaults_to_session_ttl():
    assert Settings(session_ttl_seconds=60).fence_ttl_seconds == 60
    assert Settings(session_ttl_seconds=60, fence_ttl_seconds=5).fence_ttl_seconds == 5


def test_haproxy_is_the_ingress_where_a_binary_exists_and_the_proxy_where_none_does(monkeypatch, tmp_path, capsys):
    """Ray bundles HAProxy on Linux only: a laptop without it must still start, on Serve's default proxy."""
    from deployments import local

    if local.haproxy_binary() is None:
        pytest.skip("no HAProxy on this machine to start from")
    assert local.available_ingress("haproxy") == "haproxy"
    assert local.available_ingress("proxy") == "proxy"
    monkeypatch.setenv("RAY_SERVE_HAPROXY_BINARY_PATH", str(tmp_path / "missing"))  # as on a machine without one
    assert local.haproxy_binary() is None
    assert local.available_ingress("haproxy") == "proxy"
    assert "default proxy" in capsys.readouterr().err


def test_haproxy_runs_tuned_unless_the_environment_says_otherwise(monkeypatch):
    """Serve's per-request HAProxy metrics are off and its thread count fits the machine by default; an operator's
    own setting of either wins."""
    from deployments import local

    monkeypatch.delenv("RAY_SERVE_HAPROXY_METRICS_ENABLED", raising=False)
    monkeypatch.delenv("RAY_SERVE_HAPROXY_NBTHREAD", raising=False)
    env = local.ingress_env("haproxy")
    assert env["RAY_SERVE_HAPROXY_METRICS_ENABLED"] == "0"
    assert 1 <= int(env["RAY_SERVE_HAPROXY_NBTHREAD"]) <= 4
    monkeypatch.setenv("RAY_SERVE_HAPROXY_METRICS_ENABLED", "1")
    monkeypatch.setenv("RAY_SERVE_HAPROXY_NBTHREAD", "8")
    env = local.ingress_env("haproxy")
    assert (env["RAY_SERVE_HAPROXY_METRICS_ENABLED"], env["RAY_SERVE_HAPROXY_NBTHREAD"]) == ("1", "8")
    assert "RAY_SERVE_HAPROXY_NBTHREAD" not in local.ingress_env("proxy")

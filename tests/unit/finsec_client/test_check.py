"""`finsec check` (and `finsec serve`, which runs it first): a user's first-hour mistakes in a serve config and the
FINSEC_ environment, each one line naming where it was made and what to change, every one at once, exit 2, no
traceback, before any cluster starts. Reachability against real loopback servers: a real redis-server, and a
port nothing listens on."""

from __future__ import annotations

import pytest
import yaml

from deployments.cli import main
from deployments.http.admission import Admission
from deployments.settings import Settings
from finsec.corpus.generate import embedded_corpus_dir
from harness.llm_stub import closed_port_url, running_stub
from harness.redis_server import running_redis

INGRESS = "FinsecIngress"


def config(tmp_path, args: dict | None = None, deployment: dict | None = None) -> str:
    path = tmp_path / "serve.yaml"
    app = {
        "name": "finsec",
        "import_path": "deployments.builder:build_app",
        "route_prefix": "/",
        "args": args or {},
        "deployments": [{"name": INGRESS, **(deployment or {})}],
    }
    path.write_text(yaml.safe_dump({"http_options": {"port": 8000}, "applications": [app]}))
    return str(path)


def errors(argv: list[str], capsys) -> list[str]:
    import ray

    connected = ray.is_initialized()
    assert main(argv) == 2
    assert ray.is_initialized() == connected  # said before any cluster started
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert lines and all(line.startswith("finsec: error: config ") for line in lines) and "Traceback" not in err
    return lines


@pytest.fixture(autouse=True)
def no_finsec_variables(monkeypatch):
    import os

    for name in [n for n in os.environ if n.upper().startswith("FINSEC_")]:
        monkeypatch.delenv(name)


def test_a_sound_config_passes(tmp_path, capsys):
    assert main(["check", config(tmp_path, {"num_shards": 2})]) == 0
    assert "sound" in capsys.readouterr().out


def test_a_corpus_folder_that_is_not_there_is_named(tmp_path, capsys):
    [line] = errors(["check", config(tmp_path, {"corpus_dir": str(tmp_path / "nonexistent")})], capsys)
    assert "args.corpus_dir" in line and "does not exist" in line and "finsec corpus write" in line
    [line] = errors(["check", config(tmp_path, {"corpus_dir": str(tmp_path)})], capsys)
    assert "has no files/company_tickers.json" in line


def test_a_misspelt_serve_key_is_not_dropped(tmp_path, capsys):
    [line] = errors(["check", config(tmp_path, deployment={"num_replica": 2})], capsys)
    assert "deployments[0].num_replica" in line and "did you mean num_replicas?" in line


def test_serve_options_that_would_queue_or_refuse_before_admission_are_refused(tmp_path, capsys):
    """Serve's count-based backpressure would turn away requests the app's admission lets wait; a smaller
    max_ongoing_requests would hold them in Serve's queue, untimed."""
    deployment = {"max_queued_requests": 16, "backpressure_config": {"retry_after_s": 1}, "max_ongoing_requests": 16}
    lines = errors(["check", config(tmp_path, {"admission_running": 8}, deployment)], capsys)
    assert len(lines) == 3, lines
    queued, backpressure, ongoing = lines
    assert "FinsecIngress.max_queued_requests" in queued and "admission_wait_seconds" in queued
    assert "FinsecIngress.backpressure_config" in backpressure and "admission_retry_after_seconds" in backpressure
    assert "FinsecIngress.max_ongoing_requests 16" in ongoing and "admission_running" in ongoing
    # what admission may hold, or more, passes; so does leaving them out
    held = Admission.from_settings(Settings(admission_running=8)).most_held()
    assert (
        main(
            [
                "check",
                config(tmp_path, {"admission_running": 8}, {"max_ongoing_requests": held, "max_queued_requests": -1}),
            ]
        )
        == 0
    )


def test_a_bad_variable_is_blamed_on_the_variable(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FINSEC_NUM_SHARDS", "abc")
    [line] = errors(["check", config(tmp_path, {"num_shards": 2})], capsys)
    assert "environment variable FINSEC_NUM_SHARDS" in line and "args" not in line


def test_a_dict_variable_that_is_not_json_says_how_to_write_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FINSEC_STATE_ACTOR_RESOURCES", "finsec_state=0.01")
    [line] = errors(["check", config(tmp_path)], capsys)
    assert "FINSEC_STATE_ACTOR_RESOURCES" in line and "JSON" in line
    monkeypatch.setenv("FINSEC_STATE_ACTOR_RESOURCES", '{"finsec_state": 0.01}')
    assert main(["check", "--offline", config(tmp_path)]) == 0


def test_a_misspelt_variable_or_setting_is_not_ignored(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FINSEC_NUM_SHARD", "4")
    [line] = errors(["check", config(tmp_path, {"num_shard": 4})], capsys)[:1]
    assert "FINSEC_NUM_SHARD is not a setting (did you mean FINSEC_NUM_SHARDS?)" in line
    monkeypatch.delenv("FINSEC_NUM_SHARD")
    [line] = errors(["check", config(tmp_path, {"num_shard": 4})], capsys)
    assert "args.num_shard is not a setting (did you mean num_shards?)" in line
    monkeypatch.setenv("FINSEC_URL", "http://127.0.0.1:8000")  # the CLI's own variable, not a setting
    assert main(["check", "--offline", config(tmp_path)]) == 0


def test_every_mistake_at_once(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FINSEC_NUM_SHARDS", "abc")
    monkeypatch.setenv("FINSEC_STATE_ACTOR_RESOURCES", "finsec_state=0.01")
    monkeypatch.setenv("FINSEC_NUM_SHARD", "4")
    lines = errors(
        ["serve", config(tmp_path, {"corpus_dir": "/nonexistent", "num_shard": 4}, {"num_replica": 2})], capsys
    )
    said = "\n".join(lines)
    for mistake in (
        "num_replica ",
        "FINSEC_NUM_SHARD ",
        "args.corpus_dir",
        "FINSEC_NUM_SHARDS:",
        "FINSEC_STATE_ACTOR_RESOURCES",
        "args.num_shard ",
    ):
        assert mistake in said, (mistake, said)
    assert len(lines) == 6


def test_stores_and_endpoints_must_answer(tmp_path, capsys):
    dead_url = closed_port_url()
    endpoint = {"base_url": dead_url, "api": "chat_completions", "model": "m"}
    lines = errors(
        ["check", config(tmp_path, {"mark_store_url": "redis://127.0.0.1:1/0", "retrieval_model": endpoint})], capsys
    )
    assert any("args.mark_store_url: the Redis does not answer" in line for line in lines)
    assert any("args.retrieval_model.base_url: nothing answers" in line for line in lines)
    assert main(["check", "--offline", config(tmp_path, {"retrieval_model": endpoint})]) == 0
    with running_redis() as redis, running_stub() as model:
        live = {
            "mark_store_url": redis.url,
            "retrieval_model": {**endpoint, "base_url": model.base_url},
            "mark_store_durability_check": False,
        }
        assert main(["check", config(tmp_path, live)]) == 0


def test_every_setting_is_described(capsys):
    undescribed = [name for name, field in Settings.model_fields.items() if not field.description]
    assert undescribed == []
    assert main(["check", "--explain"]) == 0
    listed = capsys.readouterr().out
    assert all(f"FINSEC_{name.upper()};" in listed for name in Settings.model_fields)


def test_the_packaged_and_shipped_configs_are_sound(capsys):
    from deployments.cli.serve_config import packaged_config

    for name in ("serve.yaml", "serve-cluster.yaml"):
        assert main(["check", "--offline", str(packaged_config(name))]) == 0, capsys.readouterr().err
    assert embedded_corpus_dir().is_dir()

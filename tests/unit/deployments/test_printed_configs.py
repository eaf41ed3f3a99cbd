"""Every configuration that `finsec` prints or the docs show starts the app, in one process (no Ray).

- `finsec corpus serve DIR` prints settings for the live-EDGAR path; the app started with exactly those
  answers a held-out question the way the app started on the folder itself does (a real loopback server).
- docs/configuration.md's "to use | set" table, its `FINSEC_<FIELD>=...` examples and its `corpus serve` paragraph, the
  shipped configs (with cluster/README.md's environment) and no configuration at all: each is read from the
  file as written, a value filled in only where the text names a key without one, and started (the lifespan
  runs, as a replica's does; harness/inprocess.py).
"""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from deployments.settings import Settings
from finsec.corpus.generate import questions
from harness.inprocess import InProcess
from harness.real_filings import EDGAR_REAL

ROOT = Path(__file__).resolve().parents[3]
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text()
CLUSTER_README = (ROOT / "cluster" / "README.md").read_text()
Q = questions()[-1]  # a question the other in-process suites do not ask
# Keys that appear in docs/configuration.md's snippets but are fields of a nested value, not settings.
NESTED_KEYS = {"api", "Authorization"}
# Values for keys the page names without one ("`sec_api_key`"), by the row or example that names them.
FILL = {
    "sec_api_key": "sec-api-placeholder",
    "tavily_api_key": "tvly-placeholder",
    "admin_token": "operator-token-of-at-least-32-chars",
    "sec_www_base_url": "http://10.8.0.5:8800",
    "sec_data_base_url": "http://10.8.0.5:8800",
}


def started(block: dict[str, Any]) -> InProcess:
    """The app from exactly `block` (InProcess's own default corpus_dir would change what a block means)."""
    return InProcess(**{"corpus_dir": None, **block})


def serves(app: InProcess) -> None:
    assert app.get("/health").json() == {"status": "ok"}
    assert app.post("/seed_session", json={}).json() == {}


def loopback(sec) -> dict[str, Any]:
    """The page's private-mirror row, pointed at the test's loopback SEC server (no internet in tests)."""
    return {"sec_www_base_url": sec.url, "sec_data_base_url": sec.url, "fetch_trusted_networks": ["127.0.0.1/32"]}


def shown_settings(text: str) -> tuple[dict[str, Any], set[str]]:
    """The `key: value` snippets of `text` that name settings, and the settings it names bare (`sec_api_key`).
    A snippet with a key that is no setting fails: the page names a setting that does not exist."""
    values: dict[str, Any] = {}
    bare: set[str] = set()
    for snippet in re.findall(r"`([^`]+)`", text):
        if snippet in Settings.model_fields:
            bare.add(snippet)
            continue
        try:
            parsed = yaml.safe_load(snippet)
        except yaml.YAMLError:
            continue
        if not isinstance(parsed, dict) or "..." in snippet:  # prose, or "judge_model: {...} as above"
            continue
        unknown = set(parsed) - set(Settings.model_fields) - NESTED_KEYS
        assert not unknown, f"`{snippet}` names no setting: {unknown}"
        values.update({k: v for k, v in parsed.items() if k in Settings.model_fields})
    return values, bare


def block_of(text: str, also: dict[str, Any] | None = None) -> dict[str, Any]:
    values, bare = shown_settings(text)
    return {**{name: FILL[name] for name in bare if name in FILL}, **(also or {}), **values}


# ----- `finsec corpus serve DIR` -----


def corpus_serve(folder: Path) -> tuple[subprocess.Popen, dict[str, Any]]:
    """Start the real command on a free port; returns it and the settings block it printed."""
    command = [str(Path(sys.executable).parent / "finsec"), "corpus", "serve", str(folder), "--port", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    lines = []
    while (line := process.stdout.readline()) and not line.startswith("stop with"):
        lines.append(line)
    assert lines and lines[0].startswith(f"serving {folder.resolve()} at http://127.0.0.1:"), lines
    return process, yaml.safe_load("".join(line for line in lines if line.startswith("  ")))


def held_out_answers(app: InProcess) -> dict[str, Any]:
    """One question worked through every EDGAR-backed tool, as the scripted policy would."""
    answers = {
        "sec_filing_search": app.post("/sec_filing_search", json={"ticker": Q["ticker"]}).json(),
        "edgar_search": app.post(
            "/edgar_search", json={"search_query": "total net revenues", "form_types": [Q["form"]]}
        ).json(),
    }
    app.post("/seed_session", json={})
    answers["parse_html_page"] = app.post("/parse_html_page", json={"url": Q["url"], "key": "doc"}).json()
    answers["retrieve_information"] = app.post(
        "/retrieve_information", json={"prompt": f"{Q['question']} {{{{doc}}}}"}
    ).json()
    return answers


@pytest.mark.timeout(180)
def test_what_corpus_serve_prints_starts_and_answers_as_the_folder_does(corpus):
    """Mutation: the block printed before (edgar_source live, the URLs, the trusted network, no
    edgar_search_mode or corpus_dir) is refused by Settings; a block naming another folder, or searching
    nothing, answers edgar_search differently from the folder."""
    process, block = corpus_serve(corpus)
    try:
        settings = Settings(**block)
        assert settings.edgar_source == "live" and settings.sec_www_base_url.startswith("http://127.0.0.1:")
        with started(block) as live:
            over_http = held_out_answers(live)
            process.send_signal(signal.SIGTERM)
            assert process.wait(30) == 0
            # the documents really came over the printed server: with it gone, an unread filing cannot be had
            other = next(q["url"] for q in questions() if q["url"] != Q["url"])
            gone = live.post("/parse_html_page", json={"url": other, "key": "other"}).json()["results"]
            assert gone.startswith("Failed"), gone[:200]
    finally:
        if process.poll() is None:
            process.kill()
    with started({"corpus_dir": corpus}) as local:
        from_folder = held_out_answers(local)
    assert over_http == from_folder
    assert json.loads(from_folder["sec_filing_search"]["results"]) and json.loads(
        from_folder["edgar_search"]["results"]
    ), from_folder
    assert from_folder["parse_html_page"]["results"].startswith("SUCCESS")
    assert Q["evidence"] in from_folder["retrieve_information"]["results"]


# ----- docs/configuration.md -----


def readme_table_rows() -> dict[str, str]:
    """The "| to use | set |" table: label -> what to set."""
    table = CONFIGURATION.split("| to use | set |", 1)[1].split("\n\n", 1)[0]
    rows = [
        line.strip().strip("|").split(" | ", 1)
        for line in table.splitlines()
        if line.startswith("| ") and not line.startswith("|---")
    ]
    assert len(rows) >= 8, rows
    return {label.strip(): cell.strip() for label, cell in rows}


ROWS = readme_table_rows()


def _row(label: str):
    return pytest.param(label, id=label)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("label", [_row(label) for label in ROWS])
def test_every_readme_table_row_starts(label, sec, monkeypatch):
    """Each row of the table on its own, as written (`judge_model: {...} as above` takes the model row's
    value). Mutation: a row naming a setting that is no field, or a combination Settings refuses."""
    monkeypatch.chdir(ROOT)  # the page's relative paths are relative to the project
    also = (
        {"judge_model": shown_settings(ROWS["a model for `retrieve_information`"])[0]["retrieval_model"]}
        if ("judge_model" in ROWS[label])
        else {}
    )
    block = block_of(ROWS[label], also)
    assert block, f"the row {label!r} shows no setting"
    if "corpus_dir" in block:  # the page's folder is an example: the real filings stand in for it
        if not EDGAR_REAL.is_dir():
            pytest.skip(f"real filings not found at {EDGAR_REAL}")
        block = {**block, "corpus_dir": str(EDGAR_REAL)}
    if block.get("edgar_source") == "live":
        block = {**block, **loopback(sec)}
    with started(block) as app:
        serves(app)
        if "admin_token" in block:  # the retire route exists only with a token
            retire = app.post(
                "/admin/retire_session_state",
                json={"session_id": "x"},
                headers={"Authorization": f"Bearer {block['admin_token']}"},
            )
            assert retire.json() == {"session_id": "x", "retired": "ok"}, retire.text


def readme_environment_examples() -> list[str]:
    """The backticked commands that set FINSEC_<FIELD>=value."""
    return [snippet for snippet in re.findall(r"`([^`]+)`", CONFIGURATION) if re.search(r"\bFINSEC_[A-Z_]+=", snippet)]


ENV_EXAMPLES = readme_environment_examples()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("example", [pytest.param(example, id=example[:40]) for example in ENV_EXAMPLES])
def test_every_readme_environment_example_starts(example, sec, monkeypatch):
    monkeypatch.chdir(ROOT)
    env = dict(word.split("=", 1) for word in shlex.split(example) if re.match(r"FINSEC_[A-Z_]+=", word))
    assert env, example
    if "FINSEC_CORPUS_DIR" in env:  # the page's folder is an example: the real filings stand in for it
        if not EDGAR_REAL.is_dir():
            pytest.skip(f"real filings not found at {EDGAR_REAL}")
        env["FINSEC_CORPUS_DIR"] = str(EDGAR_REAL)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    also = loopback(sec) if env.get("FINSEC_EDGAR_SOURCE") == "live" else {}
    with started(also) as app:  # the environment wins over init values, as in a replica
        for name in env:  # each variable took effect
            field = name.removeprefix("FINSEC_").lower()
            assert getattr(app.settings, field) != Settings.model_fields[field].default, name
        serves(app)


def test_the_readme_shows_what_this_suite_reads():
    """Guards the parsers above: if the page's layout changes, this says so instead of testing nothing."""
    assert {"live SEC EDGAR", "a dataset cutoff", "the internal retire route"} <= set(ROWS)
    assert len(ENV_EXAMPLES) >= 3 and any("FINSEC_JUDGE_MODEL" in e for e in ENV_EXAMPLES)
    assert "`finsec corpus serve DIR` serves" in CONFIGURATION


@pytest.mark.timeout(60)
def test_the_readme_corpus_serve_paragraph_starts(corpus):
    """The settings the paragraph names, with its mirror's URL and folder filled in: against the real mirror."""
    from finsec_client.mirror_server import MirrorServer

    paragraph = CONFIGURATION.split("`finsec corpus serve DIR` serves", 1)[1].split("\n\n", 1)[0]
    with MirrorServer(corpus) as mirror:
        block = block_of(
            paragraph,
            {
                "sec_www_base_url": mirror.url,
                "sec_data_base_url": mirror.url,
                "corpus_dir": str(corpus),
                "fetch_trusted_networks": ["127.0.0.1/32"],
            },
        )
        assert block["edgar_source"] == "live"
        with started(block) as app:
            serves(app)


# ----- the shipped configs, cluster/README.md's environment, and no configuration -----


@pytest.mark.timeout(60)
@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_the_shipped_configs_start(path, monkeypatch, redis_server):
    """With the environment cluster/README.md says every node of a running Ray cluster carries (the marks in a
    real Redis)."""
    (app_config,) = yaml.safe_load(path.read_text())["applications"]
    section = CLUSTER_README.split("## On a running Ray cluster", 1)[1].split("\n## ", 1)[0]
    env = {
        name: f"{name.lower()}-value-long-enough-for-a-secret" for name in re.findall(r"`(FINSEC_[A-Z_]+)`", section)
    }
    assert {"FINSEC_COOKIE_SECRET", "FINSEC_ADMIN_TOKEN", "FINSEC_MARK_STORE_URL"} <= set(env)
    env["FINSEC_MARK_STORE_URL"] = redis_server.url
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with started(app_config["args"]) as app:
        assert app.settings.admin_token.get_secret_value() == "finsec_admin_token-value-long-enough-for-a-secret"
        assert app.settings.mark_store() == redis_server.url
        serves(app)


def test_no_configuration_starts():
    """docs/configuration.md: "With no configuration it runs fully offline" (and cluster/README.md's `Settings()`)."""
    with started({}) as app:
        serves(app)
        assert app.settings.edgar_source == "embedded" and app.settings.edgar_search_mode == "local"
        results = app.post("/edgar_search", json={"search_query": "total net revenues"}).json()["results"]
        assert json.loads(results), results

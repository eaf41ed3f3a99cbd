"""The README and the docs it maps: the two commands and the example first, the example runs as written against a
real server, every setting documented once (generated from the model), and every link resolves."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from deployments.cli.settings_check import reference_markdown
from finsec.net.ports import free_port

ROOT = Path(__file__).resolve().parents[3]
README = (ROOT / "README.md").read_text()
DOCS = sorted((ROOT / "docs").rglob("*.md"))


def test_the_first_screen_holds_the_two_commands_the_example_and_the_trainers():
    lines = README.splitlines()
    assert lines[2].split()[:2] == ["make", "demo"] and lines[5].split()[:2] == ["make", "test"]
    first_screen = "\n".join(lines[:60])
    assert "<!-- episode-example" in first_screen
    for recipe in ("openenv", "mcp", "verifiers", "nemo-gym"):
        assert f"(docs/recipes/{recipe}.md)" in README, recipe
    assert len(lines) <= 160, "the README is for users: the rest goes to docs/"


def example() -> str:
    match = re.search(r"<!-- episode-example[^>]*-->\s*```sh\n(.*?)```\s*<!-- /episode-example -->", README, re.S)
    assert match, "the README lost its marked example"
    return match.group(1)


@pytest.mark.timeout(120)
def test_the_episode_example_runs_as_written(tmp_path):
    """Its first line started as written but on a free port (`finsec serve --in-process`, a real HTTP server),
    then the rest in bash, word for word but the port: every call answers, and the passage the last one
    retrieves from the parsed filing holds the figure the question asks for."""
    first, *rest = example().strip().splitlines()
    assert first.startswith("finsec serve --in-process &")
    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "finsec"), "serve", "--in-process", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        for line in server.stdout:
            if "is up at" in line:
                break
        else:
            pytest.fail(f"finsec serve --in-process did not start (exit {server.poll()})")
        script = "\n".join(line.replace(":8000", f":{port}") for line in rest)
        script = script.replace("curl -s ", "curl -sS --fail-with-body ").replace("\n", "\necho\n") + "\necho"
        run = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "NO_PROXY": "*"},
        )
        assert run.returncode == 0, run.stderr + run.stdout
        seeded, filings, parsed, retrieved = [json.loads(line) for line in run.stdout.split("\n") if line]
        assert seeded == {}
        url = re.search(r'"url": "([^"]+)"', example()).group(1)
        assert url in filings["results"] and "ERROR" not in parsed["results"]
        assert "979,207" in retrieved["results"]
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=60)


def test_every_setting_is_documented_once_as_the_model_says():
    text = (ROOT / "docs/configuration.md").read_text()
    match = re.search(r"<!-- settings: [^>]*-->\n(.*?)<!-- /settings -->", text, re.S)
    assert match, "docs/configuration.md lost its generated block"
    assert match.group(1) == reference_markdown(), "run `finsec check --explain --markdown` and paste its output"


@pytest.mark.parametrize(
    "page",
    [ROOT / "README.md", ROOT / "cluster/README.md", ROOT / "tests/README.md", *DOCS],
    ids=lambda p: p.relative_to(ROOT).as_posix(),
)
def test_every_relative_link_resolves(page):
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
        if not re.match(r"[a-z]+://|mailto:", target):
            assert (page.parent / target).exists(), f"{page.name} links to {target}, which is not there"


def _named_paths(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w/.])((?:tests|harness|bench)/[\w/.-]+\.py)\b", text))


def test_every_test_and_helper_the_docs_and_the_code_name_exists():
    """tests/README.md maps each rule to its tests; it, the other docs and the code's comments name test and helper
    files by path (or, in the map, by file name): each must be there."""
    pages = [ROOT / "README.md", ROOT / "tests/README.md", ROOT / "cluster/README.md", ROOT / "bench/README.md", *DOCS]
    sources = [
        p
        for folder in ("deployments", "finsec", "finsec_client", "session_store", "harness", "tests", "bench")
        for p in (ROOT / folder).rglob("*.py")
    ]
    missing = {
        f"{source.relative_to(ROOT)}: {path}"
        for source in [*pages, *sources]
        for path in _named_paths(source.read_text())
        if not (ROOT / path).exists()
    }
    tests = {p.name for p in (ROOT / "tests").rglob("test_*.py")}
    named_in_map = set(re.findall(r"\b(test_\w+\.py)\b", (ROOT / "tests/README.md").read_text()))
    missing |= {f"tests/README.md: {name}" for name in named_in_map - tests}
    assert sorted(missing) == []

"""The built wheel works outside the checkout: installed (not editable) into a fresh virtualenv, run from another
folder, `finsec --help`, `finsec serve --in-process` (its packaged default config), `finsec rollouts`, the MCP
recipe's client, `finsec tasks nemo-gym` and `finsec recipe nemo-gym` (its templates are package data) work.

The new virtualenv takes the dependencies from this one's site-packages (a path in a .pth file, whose own .pth
files, this project's editable install among them, are not read), so only the wheel provides the project."""

from __future__ import annotations

import os
import signal
import site
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from finsec.net.ports import free_port
from harness.extras import needs

ROOT = Path(__file__).resolve().parents[3]
CLEAN = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the wheel, not a checkout on the path


def test_pyproject_lists_every_package_of_the_tree():
    """The wheel's packages are listed (configs/ ships as one), so a new package not listed would be left out."""
    import tomllib

    from setuptools import find_packages

    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = find_packages(ROOT, include=["deployments*", "finsec*", "session_store*"])
    assert sorted(listed) == sorted([*found, "deployments.configs"])
    assert not (ROOT / "deployments/configs").exists() and all(
        not path.is_symlink() for path in (ROOT / "configs").iterdir()
    )


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(where / "dist"), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        env=CLEAN,
    )
    if built.returncode != 0 and "No matching distribution" in built.stderr:
        pytest.skip("no package index to build the wheel with: " + built.stderr[-300:])
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next((where / "dist").glob("finsec_serve-*.whl"))
    env = where / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120, env=CLEAN)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(env), "platbase": str(env)}))
    (purelib / "dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(env / "bin" / "python"),
            "install",
            "--no-deps",
            "-q",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=CLEAN,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    return env


# docs/recipes/mcp.md's client, as a user runs it
MCP_CLIENT = """
import asyncio, sys
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

async def main():
    http = httpx2.AsyncClient()
    async with http, streamable_http_client(sys.argv[1], http_client=http) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("sec_filing_search", {"ticker": "HLXR1", "form_types": ["10-K"]})
            print(result.content[0].text)

asyncio.run(main())
"""


def run(venv: Path, *argv: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(venv / "bin" / argv[0]), *argv[1:]], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=CLEAN
    )


def test_the_wheel_provides_every_package_and_none_from_the_checkout(venv, tmp_path):
    where = run(
        venv,
        "python",
        "-c",
        "import deployments, finsec, finsec_client, session_store as s; "
        "print(finsec.__file__, finsec_client.__file__, deployments.__file__, s.__file__)",
        cwd=tmp_path,
    )
    assert where.returncode == 0, where.stderr
    assert all(path.startswith(str(venv)) for path in where.stdout.split()), where.stdout
    harness = run(venv, "python", "-c", "import harness", cwd=tmp_path)
    assert harness.returncode != 0  # what tests and benchmarks share is not shipped
    for package in ("deployments", "finsec", "finsec_client", "session_store"):  # typed (PEP 561)
        folder = next(path for path in where.stdout.split() if f"/{package}/" in path).rsplit("/", 1)[0]
        assert Path(folder, "py.typed").is_file(), package


@contextmanager
def serving(venv: Path, cwd: Path) -> Iterator[int]:
    """`finsec serve --in-process` from the wheel on a free port, until SIGTERM, which it must exit 0 on."""
    port = free_port()
    server = subprocess.Popen(
        [str(venv / "bin" / "finsec"), "serve", "--in-process", "--port", str(port)],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=CLEAN,
    )
    try:
        first = server.stdout.readline()
        assert first.startswith(f"finsec-serve is up at http://127.0.0.1:{port}"), first + server.stdout.read()
        yield port
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(30) == 0


def test_the_mcp_recipes_client_reaches_the_installed_server(venv, tmp_path):
    """docs/recipes/mcp.md's client against `finsec serve --in-process` from the wheel (the mcp extra's client)."""
    needs("mcp", "mcp", "httpx2")
    with serving(venv, tmp_path) as port:
        spoke = run(venv, "python", "-c", MCP_CLIENT, f"http://127.0.0.1:{port}/mcp", cwd=tmp_path)
        assert spoke.returncode == 0 and "HLXR1" in spoke.stdout, spoke.stdout[-2000:] + spoke.stderr[-2000:]


def test_the_commands_work_from_another_folder(venv, tmp_path):
    helped = run(venv, "finsec", "--help", cwd=tmp_path)
    assert helped.returncode == 0 and "rollouts" in helped.stdout, helped.stderr
    with serving(venv, tmp_path) as port:
        played = run(
            venv,
            "finsec",
            "rollouts",
            "--url",
            f"http://127.0.0.1:{port}",
            "-n",
            "4",
            "-c",
            "2",
            "--out",
            "runs.jsonl",
            "--fail-on-masked",
            cwd=tmp_path,
        )
        assert played.returncode == 0, played.stdout[-2000:] + played.stderr[-2000:]
        assert len((tmp_path / "runs.jsonl").read_text().splitlines()) == 1 + 4  # the run's options, 4 episodes
        viewed = run(venv, "finsec", "view", "runs.jsonl", "--no-open", cwd=tmp_path)  # its page is package data
        assert viewed.returncode == 0 and "finsec-data" in (tmp_path / "runs.html").read_text(), viewed.stderr
        converted = run(venv, "finsec", "tasks", "nemo-gym", "--out", "rows.jsonl", cwd=tmp_path)
        assert converted.returncode == 0 and (tmp_path / "rows.jsonl").stat().st_size, converted.stderr
        recipe = run(
            venv,
            "finsec",
            "recipe",
            "nemo-gym",
            "gym",
            "--finsec-url",
            f"http://127.0.0.1:{port}",
            "--model-url",
            "http://127.0.0.1:8001/v1",
            "--model",
            "m",
            cwd=tmp_path,
        )  # the package's data
        assert recipe.returncode == 0 and (tmp_path / "gym/gym.yaml").is_file(), recipe.stderr
        assert (tmp_path / "gym/resources_servers/finsec_external/app.py").is_file()

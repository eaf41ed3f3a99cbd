"""Shared helpers of the benchmark scripts: where the real filings are, loading them, writing reports.

The real filings are read at run time from `../shared/data/edgar-real` (relative to the project root) and are
never copied into the repository. A script calls `real_filings()` first; when the folder is absent it prints a
message and exits with status 0.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared/data/edgar-real"
RESULTS = ROOT / "bench" / "results"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.report import machine, table  # noqa: E402, F401 (the scripts import them from here)


@dataclass(frozen=True)
class Filing:
    label: str  # e.g. "AMZN 10-K 2025-02-07"
    url_path: str  # Archives/edgar/data/<cik>/<accession>/<doc>
    path: Path
    ticker: str
    company: str
    form: str
    filing_date: str

    def html(self) -> bytes:
        return self.path.read_bytes()


def real_filings(required: bool = True) -> list[Filing]:
    """The filings of MANIFEST.json; exits cleanly (status 0) with a message when the folder is absent."""
    manifest = DATA / "MANIFEST.json"
    if not manifest.is_file():
        if not required:
            return []
        print(f"SKIP: real filings not found at {DATA} (expected MANIFEST.json there); nothing to benchmark.")
        raise SystemExit(0)
    out = []
    for row in json.loads(manifest.read_text()):
        path = DATA / row["url_path"]
        if not path.is_file():
            print(f"SKIP: {path} listed in MANIFEST.json is missing.")
            raise SystemExit(0)
        out.append(
            Filing(
                label=f"{row['ticker']} {row['form']} {row['filing_date']}",
                url_path=row["url_path"],
                path=path,
                ticker=row["ticker"],
                company=row["company"],
                form=row["form"],
                filing_date=row["filing_date"],
            )
        )
    return out


def timed(fn, *args) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def median(values: list[float]) -> float:
    return statistics.median(values)


def geomean(values: list[float]) -> float:
    values = [v for v in values if v > 0]
    return statistics.geometric_mean(values) if values else float("nan")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def write_report(name: str, markdown: str) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / name
    path.write_text(markdown.rstrip() + "\n")
    print(f"report written to {path.relative_to(ROOT)}")
    return path


def run_loadgen(
    url: str, concurrency: int, seconds: float, warmup: float, flags: list[str] = (), prefix: list[str] = ()
) -> dict:
    """One bench/loadgen.py process (`prefix` runs it under another command, taskset say) and its result. The
    result comes back through a file: read from the generator's stdout, it once came back cut at 128 KiB."""
    with tempfile.TemporaryDirectory(prefix="loadgen-") as folder:
        out = Path(folder) / "result.json"
        subprocess.run(
            [
                *prefix,
                sys.executable,
                str(ROOT / "bench/loadgen.py"),
                "--url",
                url,
                "--concurrency",
                str(concurrency),
                "--seconds",
                str(seconds),
                "--warmup",
                str(warmup),
                *flags,
                "--out",
                str(out),
            ],
            check=True,
        )
        return json.loads(out.read_text())


class FinsecServe:
    """`finsec serve ARGS --port P` as a user starts it, in its own process group, once it says it is up."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None):
        from finsec.net.ports import free_port

        self.port = free_port()
        self.process = subprocess.Popen(
            [str(ROOT / ".venv/bin/finsec"), "serve", *args, "--port", str(self.port)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        for line in self.process.stdout:
            if "is up at" in line:
                break
        else:
            raise RuntimeError(f"finsec serve {' '.join(args)} did not start")
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)


@contextmanager
def commit_tree(commit: str) -> Iterator[Path]:
    """A git worktree of `commit`, so a benchmark can run that code beside this tree's; removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="finsec-before-")) / "tree"
    subprocess.run(["git", "worktree", "add", "--detach", str(root), commit], cwd=ROOT, check=True, capture_output=True)
    try:
        yield root
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(root)], cwd=ROOT, capture_output=True)

"""`finsec tasks build --address ADDR` builds each filing as a Ray task on a running cluster (the test session's),
and writes what a build in one process writes: the same tasks in the same order, the same report and manifest,
even when a worker building a filing is SIGKILLed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from deployments.cli import main
from finsec.corpus.annual_reports import write_annual_reports

BUILD = ["tasks", "build", "--forms", "10-K", "--filings-per-form", "3"]
COMPANIES = 60


def building_workers() -> list[int]:
    """The PIDs of Ray workers running a filing's build now (Ray titles a worker by the task it runs)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(b"ray::build_tasks"):
                pids.append(int(entry.name))
        except OSError:  # gone meanwhile
            continue
    return pids


def test_a_build_on_the_cluster_writes_what_one_process_writes_through_a_worker_kill(serve_url, tmp_path):
    import ray

    corpus = write_annual_reports(tmp_path / "corpus", COMPANIES, 3)
    assert main([*BUILD, "--corpus", str(corpus), "--out", str(tmp_path / "here")]) == 0
    command = [str(Path(sys.executable).parent / "finsec"), *BUILD, "--corpus", str(corpus)]
    command += ["--out", str(tmp_path / "ray"), "--address", ray.get_runtime_context().gcs_address, "--workers", "2"]
    build = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and build.poll() is None and time.monotonic() < deadline:
        for pid in building_workers():
            os.kill(pid, signal.SIGKILL)
            killed = pid
            break
        time.sleep(0.005)
    out, err = build.communicate(timeout=300)
    assert killed is not None, "no worker was seen building a filing"
    assert build.returncode == 0, err[-3000:]

    here, there = tmp_path / "here", tmp_path / "ray"
    files = sorted(p.relative_to(here) for p in here.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(there) for p in there.rglob("*") if p.is_file())
    for name in files:
        if name.name == "manifest.json":  # identical but for when it was built
            ours, theirs = (json.loads((root / name).read_text()) for root in (here, there))
            assert ours.pop("built_at") and theirs.pop("built_at") and ours == theirs
        else:
            assert (here / name).read_bytes() == (there / name).read_bytes(), name
    report = json.loads((there / "report.json").read_text())
    assert len(report["filings"]) == COMPANIES * 3 and report["growth"] == COMPANIES and report["comparisons"] > 0
    assert ray.is_initialized() and ray.cluster_resources()  # the build left the cluster up

"""Each tool's worst input at the caps, and what it costs the server: CPU, wall time, and how long a concurrent
GET /healthz waited meanwhile.

    .venv/bin/python bench/worst_inputs.py          # ~15 s; writes bench/results/worst_inputs.{md,json}

The server is the app in one process (deployments/inprocess.py under uvicorn, marks in memory), started by this
script as a subprocess over a copy of the embedded corpus with adversarial documents added, at the fetch cap and at
the most the size limits let in. The client is this process: it seeds sessions, stores the documents, then sends
each case three times and keeps the least server CPU (read from /proc, all the server's threads). A probe thread
sends /healthz every 10 ms during each request. The inputs are what audits of the code found costly: repetitive
text a policy under RL writes, patterns that once went super-linear (each kept at the size that once froze a
replica), and everything at its cap. Targets (issue: fail closed everywhere): every request under 1 s of CPU, and
no /healthz waits behind one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import httpx  # noqa: E402
from _common import machine, table, write_report  # noqa: E402

from finsec.corpus.generate import filings, write_corpus  # noqa: E402
from finsec.edgar.filing_text import Page, parse_page  # noqa: E402
from finsec.net.ports import free_port  # noqa: E402
from finsec.text.size import MAX_TAGS, MAX_TEXT_CHARS, MAX_TEXT_LINES  # noqa: E402
from finsec.tools.limits import MAX_FINAL_RESULT_CHARS, MAX_PROMPT_CHARS, MAX_QUERY_CHARS  # noqa: E402
from harness.bodies import episode_seed, new_session_id, verify_body  # noqa: E402

FETCH_CAP = 20_000_000  # the default fetch_max_bytes: the largest document a session can store
BODY_CAP = 16_000_000  # the default max_request_bytes
REPEATS = 3
FILING = next(f for f in filings() if f.form == "10-K")
FOLDER = FILING.url_path.rsplit("/", 1)[0]


def fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


# Documents stored in the session: each shape at the fetch cap (most are refused by the size limits), and at the
# most the limits let in (finsec/text/size.py), which is the costliest document a session can hold.
SHAPES: dict[str, tuple[str, str, str]] = {  # label: (start, repeated unit, end)
    "one row of ')' cells": ("<table><tr><td>Net loss</td>", "<td>)</td>", "</tr></table>"),
    "elements nested 2,000 deep": ("<div>" * 2_000, "Revenue 1,234 ", "</div>" * 2_000),
    "one text node": ("<p>", "revenue ", "</p>"),
    "plain-text lines of years that fail at their end": ("", "2020 2021 2022 2023 2024 2025 2026 2027 Total\n", ""),
    "table rows with figures": (
        "<table>",
        "<tr><td>Total net sales</td><td>$</td><td>1,234</td><td>(56)</td></tr>",
        "</table>",
    ),
}


def _units_within_limits(label: str) -> int:
    """How many units of a shape the size limits let in, from the text of a thousand of them."""
    start, unit, end = SHAPES[label]
    text = parse_page(Page((start + unit * 1_000 + end).encode())).text
    tags, lines, chars = unit.count("<"), text.count("\n") / 1_000, len(text) / 1_000
    return int(
        min(
            MAX_TAGS / tags if tags else FETCH_CAP,
            MAX_TEXT_LINES / lines if lines else FETCH_CAP,
            MAX_TEXT_CHARS / chars,
            FETCH_CAP / len(unit),
        )
        * 0.999
    )  # the estimate is close, not exact


def _document(label: str, at_limits: bool) -> bytes:
    start, unit, end = SHAPES[label]
    if at_limits:
        return (start + unit * _units_within_limits(label) + end).encode()
    return (start + fill(unit, FETCH_CAP - len(start) - len(end)) + end).encode()


DOCUMENTS: dict[str, Callable[[], bytes]] = {
    **{f"{label}, {FETCH_CAP // 1_000_000} MB": lambda label=label: _document(label, False) for label in SHAPES},
    **{f"{label}, at the size limits": lambda label=label: _document(label, True) for label in SHAPES},
}
NAMES = {label: f"worst-{n}.{'txt' if 'plain' in label else 'htm'}" for n, label in enumerate(DOCUMENTS)}


@dataclass
class Case:
    tool: str
    label: str
    path: str
    body: Callable[[], bytes]
    session: str = "filing"  # which seeded session's cookie it carries
    cold: bool = False  # its cost is paid once (a parse, an index built): the first send is measured, alone


def _prompt(unit: str) -> bytes:
    return json.dumps({"prompt": fill(unit, MAX_PROMPT_CHARS - 8) + " {{doc}}"}).encode()


def _distinct_words(separator: str) -> str:
    words, n = [], 0
    while len(separator.join(words)) < MAX_PROMPT_CHARS - 10:
        words.append(f"w{n:x}z")
        n += 1
    return separator.join(words)[: MAX_PROMPT_CHARS - 10]


def _verify(answer: str) -> bytes:
    return json.dumps(verify_body(answer)).encode()


def _padded_verify(answer: str) -> bytes:
    """A verify body at the request cap: the answer, and a trajectory that fills the rest."""
    body = verify_body(answer)
    body["response"]["output"].insert(
        0,
        {
            "type": "message",
            "role": "assistant",
            "content": [
                {
                    "type": "output_text",
                    "text": fill("the revenue was 1,234 in fiscal 2024 ", BODY_CAP - len(answer) - 2_000),
                }
            ],
        },
    )
    return json.dumps(body).encode()


CASES = [
    Case(
        "retrieve_information",
        "50,000 chars of 'how many of the '",
        "/retrieve_information",
        lambda: _prompt("how many of the "),
    ),
    Case(
        "retrieve_information",
        "'head' and 50,000 spaces",
        "/retrieve_information",
        lambda: json.dumps({"prompt": "head" + " " * (MAX_PROMPT_CHARS - 20) + "count? {{doc}}"}).encode(),
    ),
    Case(
        "retrieve_information",
        "'of' and 50,000 spaces",
        "/retrieve_information",
        lambda: json.dumps({"prompt": "of" + " " * (MAX_PROMPT_CHARS - 20) + "Apple's {{doc}}"}).encode(),
    ),
    Case(
        "retrieve_information",
        "50,000 chars of distinct words, 6 comma parts",
        "/retrieve_information",
        lambda: json.dumps({"prompt": _distinct_words(", ") + " {{doc}}"}).encode(),
    ),
    Case(
        "retrieve_information",
        "50,000 chars of distinct words over 64 documents",
        "/retrieve_information",
        lambda: json.dumps(
            {
                "prompt": _distinct_words(" ")[: MAX_PROMPT_CHARS - 64 * 10]
                + "".join(f" {{{{d{k}}}}}" for k in range(64))
            }
        ).encode(),
        session="many",
    ),
    *(
        Case(
            "parse_html_page",
            label,
            "/parse_html_page",
            lambda n=n, label=label: json.dumps(
                {"url": f"https://www.sec.gov/{FOLDER}/{NAMES[label]}", "key": f"doc{n}"}
            ).encode(),
            session="worst",
            cold=True,
        )
        for n, label in enumerate(DOCUMENTS)
    ),
    *(
        Case(
            "retrieve_information",
            f"first question over {label} (its index is built)",
            "/retrieve_information",
            lambda n=n: json.dumps({"prompt": f"How many employees? Total net sales in 2024 {{{{doc{n}}}}}"}).encode(),
            session="worst",
            cold=True,
        )
        for n, label in enumerate(DOCUMENTS)
        if label.endswith("size limits")
    ),
    Case(
        "verify",
        "an answer of 'fiscal' and 100,000 spaces",
        "/verify",
        lambda: _verify("fiscal" + " " * MAX_FINAL_RESULT_CHARS),
    ),
    Case(
        "verify", "an answer of 100,000 chars of '10-'", "/verify", lambda: _verify(fill("10-", MAX_FINAL_RESULT_CHARS))
    ),
    Case("verify", "an answer of 'the ' x 25,000", "/verify", lambda: _verify(fill("the ", MAX_FINAL_RESULT_CHARS))),
    Case(
        "verify",
        "an answer with 2,001 figures",
        "/verify",
        lambda: _verify(" ".join(f"${n},{n % 1000:03d}" for n in range(2_001))),
    ),
    Case(
        "verify",
        "a 16 MB trajectory with a 100,000-char answer",
        "/verify",
        lambda: _padded_verify(fill("$1,234 million and ", MAX_FINAL_RESULT_CHARS)),
    ),
    Case(
        "verify",
        "a 16 MB body of lists nested 50 deep",
        "/verify",
        lambda: (
            json.dumps({**verify_body("42"), "padding": "PAD"})
            .replace('"PAD"', "[" + ",".join(["[" * 50 + "1" + "]" * 50] * (BODY_CAP // 102 - 100)) + "]")
            .encode()
        ),
    ),
    Case(
        "submit_final_result",
        "100,000 chars",
        "/submit_final_result",
        lambda: json.dumps({"final_result": fill("revenue was $1,234 million ", MAX_FINAL_RESULT_CHARS)}).encode(),
    ),
    Case(
        "sec_filing_search",
        "a ticker of 2,000 chars",
        "/sec_filing_search",
        lambda: json.dumps({"ticker": "A" * MAX_QUERY_CHARS}).encode(),
    ),
    Case(
        "edgar_search",
        "2,000 chars of distinct words",
        "/edgar_search",
        lambda: json.dumps({"search_query": _distinct_words(" ")[:MAX_QUERY_CHARS]}).encode(),
    ),
    Case(
        "edgar_search",
        "2,000 chars of 'revenue '",
        "/edgar_search",
        lambda: json.dumps({"search_query": fill("revenue ", MAX_QUERY_CHARS)}).encode(),
    ),
    Case(
        "seed_session",
        "a 16 MB task_data",
        "/seed_session",
        lambda: json.dumps(episode_seed(new_session_id(), notes=[fill("a filing excerpt ", 1_000)] * 15_900)).encode(),
        session="none",
    ),
    Case(
        "aggregate_metrics",
        "16 MB of rows",
        "/aggregate_metrics",
        lambda: json.dumps(
            {
                "verify_responses": [
                    {"reward": 1.0, "_ng_task_index": i % 500, "_ng_rollout_index": i // 500, "note": "x" * 60}
                    for i in range(115_000)
                ]
            }
        ).encode(),
        session="none",
    ),
]


# ----- the server: the one-process app over the prepared corpus -----


def serve(port: int, corpus: Path) -> None:
    import uvicorn

    from deployments.inprocess import in_process_app
    from deployments.settings import Settings

    settings = Settings(app_name="worst-inputs", num_shards=2, corpus_dir=corpus, max_documents_per_session=64)
    uvicorn.run(in_process_app(settings).api, host="127.0.0.1", port=port, log_level="warning")


def _corpus() -> Path:
    mirror = write_corpus(Path(tempfile.mkdtemp(prefix="worst-inputs-")) / "mirror")
    for label, make in DOCUMENTS.items():
        (mirror / FOLDER / NAMES[label]).write_bytes(make())
    return mirror


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class HealthProbe:
    """GET /healthz every 10 ms from its own thread; the longest any of them waited."""

    def __init__(self, url: str):
        self._url, self._stop, self.worst = url, threading.Event(), 0.0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        with httpx.Client(base_url=self._url, timeout=120) as client:
            while not self._stop.wait(0.01):
                sent = time.perf_counter()
                client.get("/healthz")
                self.worst = max(self.worst, time.perf_counter() - sent)


def _sessions(url: str) -> dict[str, httpx.Client]:
    """Seeded sessions: one holding the filing as "doc", one holding it under 64 keys, one for the adversarial
    documents (stored by the parse cases)."""
    clients = {name: httpx.Client(base_url=url, timeout=600) for name in ("filing", "many", "worst", "none")}
    filing = f"https://www.sec.gov/{FILING.url_path}"
    for name in ("filing", "many", "worst"):
        assert clients[name].post("/seed_session", json=episode_seed(new_session_id())).status_code == 200
    assert "SUCCESS" in clients["filing"].post("/parse_html_page", json={"url": filing, "key": "doc"}).text
    for k in range(64):
        clients["many"].post("/parse_html_page", json={"url": filing, "key": f"d{k}"}).raise_for_status()
    return clients


def measure(url: str, pid: int, case: Case, clients: dict[str, httpx.Client]) -> dict:
    body = case.body()
    runs = []
    for _ in range(1 if case.cold else REPEATS):
        with HealthProbe(url) as probe:
            cpu, began = cpu_seconds(pid), time.perf_counter()
            response = clients[case.session].post(case.path, content=body, headers={"content-type": "application/json"})
            wall, spent = time.perf_counter() - began, cpu_seconds(pid) - cpu
        runs.append(
            {
                "cpu": spent,
                "wall": wall,
                "health": probe.worst,
                "status": response.status_code,
                "reply": response.text[:160],
            }
        )
    best = min(runs, key=lambda r: r["cpu"])
    return {
        "tool": case.tool,
        "input": case.label,
        "bytes": len(body),
        **best,
        "health_worst": max(r["health"] for r in runs),
    }


def render(rows: list[dict]) -> str:
    over = [r for r in rows if r["cpu"] >= 1.0]
    waited = max(r["health_worst"] for r in rows)
    lines = [
        "# Each tool's worst input at the caps",
        "",
        f"{machine()}. Produced by `bench/worst_inputs.py`: the app in "
        "one process (no Ray; marks in memory) under uvicorn, the client in another; each case sent "
        f"{REPEATS} times, the least server CPU kept (all the server's threads, from /proc; 10 ms resolution), "
        "but a parse and the first question over a document (the index is built) once: their cost is paid once. "
        "*/healthz waited*: the longest of the GET /healthz sent every 10 ms during the case's requests.",
        "",
        table(
            ["tool", "input", "request bytes", "status", "server CPU ms", "wall ms", "/healthz waited ms"],
            [
                [
                    r["tool"],
                    r["input"],
                    f"{r['bytes']:,}",
                    r["status"],
                    f"{r['cpu'] * 1e3:.0f}",
                    f"{r['wall'] * 1e3:.0f}",
                    f"{r['health_worst'] * 1e3:.0f}",
                ]
                for r in rows
            ],
        ),
        "",
        f"Target: under 1 s of CPU for every request: {len(over)} over "
        f"({', '.join(r['tool'] + ': ' + r['input'] for r in over) or 'none'}). "
        f"The longest /healthz wait during any case: {waited * 1e3:.0f} ms.",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "CORPUS"), help=argparse.SUPPRESS)
    parser.add_argument("--only", help="run the cases whose tool or input contains this")
    options = parser.parse_args()
    if options.serve:
        serve(int(options.serve[0]), Path(options.serve[1]))
        return 0
    corpus, port = _corpus(), free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port), str(corpus)], cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(url + "/healthz", timeout=2)
                break
            except httpx.HTTPError:
                assert server.poll() is None and time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
        clients = _sessions(url)
        rows = []
        for case in CASES:
            if options.only and options.only not in case.tool + case.label:
                continue
            rows.append(measure(url, server.pid, case, clients))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(corpus.parent, ignore_errors=True)
    if not options.only:
        (ROOT / "bench/results/worst_inputs.json").write_text(json.dumps(rows, indent=1))
        write_report("worst_inputs.md", render(rows))
    print(render(rows))
    return 1 if any(r["cpu"] >= 1.0 or r["status"] >= 500 for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())

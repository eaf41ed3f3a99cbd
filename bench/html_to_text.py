"""Benchmark: our `html_to_text` against the contract §F.6 reference (BeautifulSoup `html.parser`).

    .venv/bin/python bench/html_to_text.py [--repeats N]

Inputs: the eight real filings of ../shared/data/edgar-real and the documents of the generated corpus
(`finsec.corpus.generate.write_corpus`, written to a temporary folder). Both implementations run side by side
in this process on the same bytes, interleaved, several times each; the report gives medians and the ratio
reference/ours (the target is >= 3x). Memory is measured twice: the Python heap peak with tracemalloc (lxml's C
tree is outside it), and the growth of peak RSS in a fresh subprocess per (implementation, filing), which counts
the libxml2 tree too.

Quality checks, per file, for both outputs:
- header leak: strings that occur only inside the hidden `ix:header` (dei: facts such as the CIK with its zeros,
  context dates, member QNames...) and nowhere in the visible body; how many of them the text contains;
- glued cells: places where a label is glued to a number, or two numbers to each other (`activities46,752`,
  `(2,722)30,425`, `47%49%`);
- displayed facts: each `ix:nonFraction` outside the header (not under `display:none`, not nested in another
  `ix:nonFraction`, which shows the same digits once), its displayed string
  (e.g. `115,877`); the share of distinct strings found in the text, and the share of displays covered
  (a string displayed k times must occur, as a standalone number, at least k times).

Writes bench/results/html_to_text.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import resource
import subprocess
import sys
import tempfile
import tracemalloc
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lxml.html  # noqa: E402
from _common import ROOT, geomean, machine, median, ms, real_filings, table, timed, write_report  # noqa: E402
from bs4 import BeautifulSoup  # noqa: E402

from finsec.text.html_to_text import html_to_text  # noqa: E402

# --- the reference of contract §F.6 ----------------------------------------------------------------------------


def reference_html_to_text(html: str | bytes) -> str:
    """Contract §F.6: html.parser, drop script/style, get_text(), strip lines, split on double spaces, join."""
    if isinstance(html, bytes):
        html = html.decode("utf-8", errors="replace")  # what requests' `.text` hands NeMo Gym; cheap next to parsing
    soup = BeautifulSoup(html, "html.parser")
    for element in soup(["script", "style"]):
        element.decompose()
    text = soup.get_text()
    lines = (line.strip() for line in text.splitlines())
    phrases = (phrase.strip() for line in lines for phrase in line.split("  "))
    return "\n".join(phrase for phrase in phrases if phrase)


IMPLEMENTATIONS = {"ours": html_to_text, "reference": reference_html_to_text}


# --- inputs -----------------------------------------------------------------------------------------------------


def inputs(with_corpus: bool = True) -> list[tuple[str, str, Path]]:
    """(label, kind, path): the real filings, then the generated corpus's primary documents."""
    out = [(f.label, "real", f.path) for f in real_filings()]
    if with_corpus:
        from finsec.corpus.generate import write_corpus

        corpus = write_corpus(Path(tempfile.mkdtemp(prefix="finsec-bench-")) / "corpus")
        for path in sorted(corpus.glob("Archives/edgar/data/*/*/*.htm")):
            out.append((f"corpus {path.name}", "corpus", path))
    return out


# --- source facts -----------------------------------------------------------------------------------------------

_WS = re.compile(r"\s+")
_HIDDEN = re.compile(r"display\s*:\s*none", re.IGNORECASE)


def _tag(element) -> str:
    return element.tag.lower() if isinstance(element.tag, str) else ""


def source_facts(html: bytes) -> dict:
    """Header-only strings, dei: header facts, and displayed ix:nonFraction strings, read with lxml."""
    root = lxml.html.fromstring(html)
    headers = [e for e in root.iter() if _tag(e) == "ix:header"]
    header_strings: set[str] = set()
    dei_facts: list[tuple[str, str]] = []
    for header in headers:
        for element in header.iter():
            value = _WS.sub(" ", element.text or "").strip()
            if len(value) >= 3:
                header_strings.add(value)
            if _tag(element) in ("ix:nonnumeric", "ix:nonfraction") and (element.get("name") or "").startswith("dei:"):
                dei_facts.append((element.get("name"), _WS.sub(" ", element.text_content()).strip()))
    displayed: list[str] = []
    for element in root.iter():
        if _tag(element) != "ix:nonfraction":
            continue
        if any(
            _tag(a) in ("ix:header", "ix:nonfraction") or _HIDDEN.search(a.get("style") or "")
            for a in element.iterancestors()
        ):
            continue  # hidden, or nested in another fact that shows the same digits once
        value = _WS.sub(" ", element.text_content()).strip()
        if value:
            displayed.append(value)
    for header in headers:
        header.drop_tree()  # keeps the tail text, which belongs to the body
    for element in [e for e in root.iter() if _tag(e) in ("script", "style")]:
        element.drop_tree()
    body = _WS.sub(" ", " ".join(root.itertext()))
    header_only = sorted(s for s in header_strings if s not in body)
    dei_only = [(name, value) for name, value in dei_facts if value and value not in body]
    return {"header_only": header_only, "dei_only": dei_only, "displayed": displayed}


# --- quality checks ---------------------------------------------------------------------------------------------

GLUE = re.compile(
    r"[A-Za-z:]\(?\$?\(?\d{1,3}(?:,\d{3})+(?![\d])"  # label glued to a grouped number: activities46,752
    r"|\d,\d{4}"  # two grouped numbers glued: 84,946115,877
    r"|\d\)\$?\(?(?:\d{1,3}(?:,\d{3})+|\d+\.\d+|\d{2,})"  # (2,722)30,425 / (0.27)$2.95; not footnotes (2)(3)
    r"|\d%\(?\$?\d"  # 47%49%
)


def standalone_count(text: str, value: str) -> int:
    return len(re.findall(r"(?<![\d,.])" + re.escape(value) + r"(?![\d]|[,.]\d)", text))


def quality(text: str, facts: dict) -> dict:
    header_only = facts["header_only"]
    leaked = [s for s in header_only if s in text]
    dei_leaked = [(n, v) for n, v in facts["dei_only"] if v in text]
    glue = list(GLUE.finditer(text))
    glued_lines = sum(1 for line in text.split("\n") if GLUE.search(line))
    counts = Counter(facts["displayed"])
    distinct_present = [v for v in counts if v in text]
    covered = sum(min(standalone_count(text, v), k) for v, k in counts.items())
    missing = [v for v in counts if v not in text]
    return {
        "chars": len(text),
        "lines": text.count("\n") + 1,
        "header_only_total": len(header_only),
        "header_leaked": len(leaked),
        "header_leaked_examples": leaked[:4],
        "dei_only_total": len(facts["dei_only"]),
        "dei_leaked": len(dei_leaked),
        "dei_leaked_examples": dei_leaked[:4],
        "glue_matches": len(glue),
        "glued_lines": glued_lines,
        "glue_examples": [text[max(0, m.start() - 25) : m.end() + 5] for m in glue[:3]],
        "facts_displayed": sum(counts.values()),
        "facts_distinct": len(counts),
        "facts_distinct_present": len(distinct_present),
        "facts_covered": covered,
        "facts_missing_examples": missing[:5],
    }


# --- memory -----------------------------------------------------------------------------------------------------


def tracemalloc_peak(impl: str, html: bytes) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        IMPLEMENTATIONS[impl](html)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def rss_growth_subprocess(impl: str, path: Path) -> int:
    """Peak RSS growth (bytes) of one conversion, in a fresh interpreter with everything already imported."""
    result = subprocess.run(
        [sys.executable, __file__, "--rss-child", impl, str(path)], capture_output=True, text=True, check=True
    )
    return int(result.stdout.strip().splitlines()[-1])


def _peak_rss() -> int:
    """Peak RSS in bytes: VmHWM (per address space, so reset by exec), else ru_maxrss (survives exec on Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _rss_child(impl: str, path: str) -> None:
    html = Path(path).read_bytes()
    IMPLEMENTATIONS[impl](b"<html><body><p>warm up</p></body></html>")
    gc.collect()
    before = _peak_rss()
    IMPLEMENTATIONS[impl](html)
    print(_peak_rss() - before)


# --- main -------------------------------------------------------------------------------------------------------


def mb(n: float) -> str:
    return f"{n / 1e6:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per implementation and file")
    parser.add_argument("--rss-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child:
        _rss_child(*args.rss_child)
        return

    files = inputs()
    rows = []
    for label, kind, path in files:
        html = path.read_bytes()
        times: dict[str, list[float]] = {"ours": [], "reference": []}
        outputs: dict[str, str] = {}
        for i in range(args.repeats):
            order = ("ours", "reference") if i % 2 == 0 else ("reference", "ours")
            for impl in order:
                gc.collect()
                seconds, text = timed(IMPLEMENTATIONS[impl], html)
                times[impl].append(seconds)
                outputs[impl] = text
        facts = source_facts(html)
        row = {
            "label": label,
            "kind": kind,
            "bytes": len(html),
            "median": {impl: median(t) for impl, t in times.items()},
            "heap": {impl: tracemalloc_peak(impl, html) for impl in IMPLEMENTATIONS},
            "rss": {impl: rss_growth_subprocess(impl, path) for impl in IMPLEMENTATIONS} if kind == "real" else None,
            "quality": {impl: quality(outputs[impl], facts) for impl in IMPLEMENTATIONS},
        }
        row["ratio"] = row["median"]["reference"] / row["median"]["ours"]
        rows.append(row)
        print(
            f"{label:32s} ours {ms(row['median']['ours']):>8s} ms  reference {ms(row['median']['reference']):>9s} ms"
            f"  x{row['ratio']:.1f}"
        )
    print(render(rows, args.repeats).split("## Speed")[0])


def render(rows: list[dict], repeats: int) -> str:
    real = [r for r in rows if r["kind"] == "real"]
    corpus = [r for r in rows if r["kind"] == "corpus"]

    def overall(group: list[dict]) -> tuple[float, float]:
        total = sum(r["median"]["reference"] for r in group) / sum(r["median"]["ours"] for r in group)
        return total, geomean([r["ratio"] for r in group])

    out = [
        "# html_to_text: ours vs the contract §F.6 reference",
        "",
        f"{machine()}. Each implementation ran {repeats} times per file, interleaved with the other, on the same "
        "bytes; times are medians. `ours` = `finsec.text.html_to_text.html_to_text(bytes)`; `reference` = "
        "BeautifulSoup(`html.parser`), script/style removed, `get_text()`, lines stripped, split on double "
        "spaces, empty phrases dropped, joined with `\\n` (input decoded to str first, as `requests`' `.text`).",
        "",
        "## Headline",
        "",
    ]
    for name, group in (("real filings", real), ("generated corpus", corpus)):
        if group:
            total, gm = overall(group)
            out.append(
                f"- **{name}** ({len(group)} files): reference/ours = **{total:.1f}x** on total time "
                f"({ms(sum(r['median']['ours'] for r in group))} ms vs "
                f"{ms(sum(r['median']['reference'] for r in group))} ms), geometric mean of per-file ratios "
                f"{gm:.1f}x; target >= 3x: **{'met' if min(total, gm) >= 3 else 'NOT met'}**."
            )
    if real:
        heap_ratio = sum(r["heap"]["reference"] for r in real) / sum(r["heap"]["ours"] for r in real)
        rss_ratio = sum(r["rss"]["reference"] for r in real) / max(1, sum(r["rss"]["ours"] for r in real))
        out.append(
            f"- **memory, real filings**: peak RSS growth reference/ours = {rss_ratio:.1f}x (mean "
            f"{mb(sum(r['rss']['ours'] for r in real) / len(real))} MB ours vs "
            f"{mb(sum(r['rss']['reference'] for r in real) / len(real))} MB reference per filing); tracemalloc "
            f"Python-heap peak reference/ours = {heap_ratio:.1f}x (lxml's C tree is not in the Python heap, so "
            "the RSS figure is the fair one)."
        )
        q = {impl: [r["quality"][impl] for r in real] for impl in IMPLEMENTATIONS}
        for impl in IMPLEMENTATIONS:
            qs = q[impl]
            out.append(
                f"- **quality, {impl}**: header-only strings leaked {sum(x['header_leaked'] for x in qs)}/"
                f"{sum(x['header_only_total'] for x in qs)} (dei: facts {sum(x['dei_leaked'] for x in qs)}/"
                f"{sum(x['dei_only_total'] for x in qs)}); glued label/number spots "
                f"{sum(x['glue_matches'] for x in qs)} on {sum(x['glued_lines'] for x in qs)} lines "
                f"(of {sum(x['lines'] for x in qs)} lines); displayed ix:nonFraction strings present "
                f"{sum(x['facts_distinct_present'] for x in qs)}/{sum(x['facts_distinct'] for x in qs)} distinct, "
                f"displays covered {sum(x['facts_covered'] for x in qs)}/{sum(x['facts_displayed'] for x in qs)}."
            )
    out += ["", "## Speed and memory per file", ""]
    out.append(
        table(
            [
                "file",
                "HTML MB",
                "ours ms",
                "reference ms",
                "ratio",
                "ours RSS MB",
                "ref RSS MB",
                "ours heap MB",
                "ref heap MB",
            ],
            [
                [
                    r["label"],
                    mb(r["bytes"]),
                    ms(r["median"]["ours"]),
                    ms(r["median"]["reference"]),
                    f"{r['ratio']:.1f}x",
                    mb(r["rss"]["ours"]) if r["rss"] else "-",
                    mb(r["rss"]["reference"]) if r["rss"] else "-",
                    f"{r['heap']['ours'] / 1e6:.2f}",
                    f"{r['heap']['reference'] / 1e6:.2f}",
                ]
                for r in rows
            ],
        )
    )
    out += [
        "",
        "RSS = growth of the process's peak RSS during one conversion, in a fresh interpreter (real filings only; "
        "for the few-KB corpus documents it is below the measurement's page granularity). heap = tracemalloc peak.",
        "",
        "## Quality per file",
        "",
        "Header leak: strings found only inside `ix:header` (not in the visible body), e.g. the zero-padded CIK, "
        "`P1Y` durations, context dates and member QNames; `dei` = the dei: facts among them. Glue: label glued to a "
        "number or numbers glued together. Facts: displayed `ix:nonFraction` strings (distinct present / distinct; "
        "standalone displays covered / displays).",
        "",
    ]
    qrows = []
    for r in rows:
        for impl in IMPLEMENTATIONS:
            x = r["quality"][impl]
            qrows.append(
                [
                    r["label"],
                    impl,
                    x["chars"],
                    x["lines"],
                    f"{x['header_leaked']}/{x['header_only_total']}",
                    f"{x['dei_leaked']}/{x['dei_only_total']}",
                    f"{x['glue_matches']} ({x['glued_lines']} lines)",
                    f"{x['facts_distinct_present']}/{x['facts_distinct']}",
                    f"{x['facts_covered']}/{x['facts_displayed']}",
                ]
            )
    out.append(
        table(
            ["file", "impl", "chars", "lines", "header leak", "dei leak", "glue", "facts distinct", "facts covered"],
            qrows,
        )
    )
    out += ["", "## Examples", ""]
    for r in real:
        for impl in IMPLEMENTATIONS:
            x = r["quality"][impl]
            bits = []
            if x["dei_leaked_examples"]:
                bits.append("dei leaked: " + ", ".join(f"`{n}={v}`" for n, v in x["dei_leaked_examples"]))
            elif x["header_leaked_examples"]:
                bits.append("header leaked: " + ", ".join(f"`{s[:40]}`" for s in x["header_leaked_examples"]))
            if x["glue_examples"]:
                bits.append("glue: " + ", ".join("`" + g.replace("`", "'") + "`" for g in x["glue_examples"]))
            if x["facts_missing_examples"]:
                bits.append("facts missing: " + ", ".join(f"`{v}`" for v in x["facts_missing_examples"]))
            if bits:
                out.append(f"- {r['label']}, {impl}: " + "; ".join(bits))
    out.append("")
    out.append("Raw numbers: see `html_to_text.json` next to this report.")
    markdown = "\n".join(out)
    write_report("html_to_text.md", markdown)
    (Path(ROOT) / "bench/results/html_to_text.json").write_text(json.dumps(rows, indent=1))
    return markdown


if __name__ == "__main__":
    main()

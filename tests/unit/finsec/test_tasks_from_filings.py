"""`finsec tasks build` over the real filings of ../shared/data/edgar-real (skipped without them): the targets of
issue 37 (40 tasks a 10-K, 20 a 10-Q, every kind), answers that are the filings' facts, the split by company, the
exports, and the live-EDGAR path through a loopback mirror. The Ray-free parts (split, usage errors) run always."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from deployments.cli import main
from finsec.grading.deterministic import DeterministicGrader
from finsec.taskgen.build import ACROSS_FILINGS, TIERS, Source, build_tasks
from finsec.taskgen.compare import COMPARED, comparison_tasks
from finsec.taskgen.figures import FORMULAS
from finsec.taskgen.split import SPLITS, split_of
from finsec.xbrl.facts import read_filing, text_of
from finsec_client.mirror_server import MirrorServer
from finsec_client.tasks import TaskFileError, load_tasks
from harness.real_filings import EDGAR_REAL, manifest, needs_real_filings


def _source(row: dict) -> Source:
    return Source(
        str(row["cik"]).zfill(10),
        row["ticker"],
        row["form"],
        row["accession_number"],
        "https://www.sec.gov/" + row["url_path"],
    )


def _build(row: dict):
    document = (EDGAR_REAL / row["url_path"]).read_text(errors="replace")
    return document, build_tasks(_source(row), document)


@pytest.fixture(scope="module")
def built():
    return [(row, *_build(row)) for row in manifest()]


@needs_real_filings
def test_every_filing_meets_the_targets_with_every_kind(built):
    kinds = Counter()
    for row, _, result in built:
        least = 40 if row["form"] == "10-K" else 20
        assert len(result.tasks) >= least, (row["ticker"], row["form"], len(result.tasks))
        kinds.update(task["kind"] for task in result.tasks)
        if row["form"] == "10-K":
            assert {task["kind"] for task in result.tasks} == set(TIERS) - ACROSS_FILINGS, row["ticker"]
    assert set(kinds) == set(TIERS) - ACROSS_FILINGS
    assert {
        task["kind"] for task in comparison_tasks([(_source(row), result, "train") for row, _, result in built])
    } == {"comparison"}


@needs_real_filings
def test_answers_are_the_filings_own_facts(built):
    """Each task's facts are in its filing with the value recorded; a change is their difference, a ratio their
    quotient; the expected answer grades as the canonical value."""
    grader = DeterministicGrader()
    for _, document, result in built:
        filing = read_filing(document)
        values: dict[tuple[str, str], set[float]] = {}
        for f in filing.facts:  # a fact may be tagged again, rounded ("$12.3 billion" beside 12,308)
            values.setdefault((f.concept, f.context.id), set()).add(f.value)
        for task in result.tasks:
            facts = task["facts"]
            for fact in facts:
                assert fact["value"] in values[(fact["concept"], fact["context"])], task["task_id"]
            value = task["canonical_answer"]["value"]
            if task["kind"] == "change":
                assert value == pytest.approx(facts[1]["value"] - facts[0]["value"])
            elif task["kind"] == "ratio":
                ratio = facts[0]["value"] / facts[1]["value"]
                assert value == pytest.approx(
                    ratio * 100 if task["canonical_answer"]["unit"] == "percent" else ratio, abs=0.05
                )
            elif task["kind"] == "mix":  # a share of total revenue, or its move between two years
                shares = [a["value"] / b["value"] * 100 for a, b in zip(facts[::2], facts[1::2], strict=True)]
                assert value == pytest.approx(shares[0] if len(shares) == 1 else shares[1] - shares[0], abs=0.05)
                said = f"{value}%" if len(shares) == 1 else f"{'up' if value > 0 else 'down'} {abs(value)} pp"
                assert grader.grade_sync(task["question"], task["expected_answer"], said).reward == 1.0, said
            elif task["kind"] == "formula":
                formula = next(f for f in FORMULAS if f.key == task["figure"])
                keys = [*formula.terms, *formula.averaged, *(f"{key}_start" for key in formula.averaged)]
                computed = formula.compute(dict(zip(keys, (fact["value"] for fact in facts), strict=True)))
                unit = task["canonical_answer"]["unit"]
                assert value == pytest.approx(computed * 100 if unit == "percent" else computed, abs=0.05)
                assert task["canonical_answer"]["formula"] == formula.formula
                written = {"percent": f"{value}%", "multiple": f"{value} times", "days": f"{value} days"}
                answer = written.get(unit) or _plain(value, "iso4217:USD")
                assert grader.grade_sync(task["question"], task["expected_answer"], answer).reward == 1.0, answer
                assert task["difficulty"] == {
                    "documents": 1,
                    "facts": len(keys),
                    "operations": task["difficulty"]["operations"],
                }
            elif facts:
                assert value == facts[0]["value"]
                assert (
                    grader.grade_sync(task["question"], task["expected_answer"], _plain(value, facts[0]["unit"])).reward
                    == 1.0
                ), task["task_id"]


def _plain(value: float, unit: str) -> str:
    """The canonical value written out in full, as a different writer would state it."""
    if unit.endswith("/xbrli:shares"):
        return f"${value:.2f}"
    return f"{'-' if value < 0 else ''}{'$' if unit == 'iso4217:USD' else ''}{abs(value):,.0f}" + (
        " shares" if unit == "xbrli:shares" else ""
    )


# Computed by hand from the segment tables as printed (in millions): Apple's Americas 167,045 of 391,035 net sales
# in fiscal 2024 (42.72%) against 162,560 of 383,285 in 2023 (42.41%); Amazon's North America 387,497 of 637,959
# (60.74%) against 352,828 of 574,785 (61.38%).
MIX_BY_HAND = {
    ("AAPL", "10-K", "share:segment:AmericasSegmentMember"): "42.7%",
    ("AAPL", "10-K", "share_change:segment:AmericasSegmentMember"): "an increase of 0.3 percentage points",
    ("AMZN", "10-K", "share:segment:NorthAmericaSegmentMember"): "60.7%",
    ("AMZN", "10-K", "share_change:segment:NorthAmericaSegmentMember"): "a decrease of 0.6 percentage points",
}


@needs_real_filings
def test_a_segments_share_and_its_move_are_what_an_analyst_computes_by_hand(built):
    found = {
        (row["ticker"], row["form"], task["task_id"].split("-mix-", 1)[1]): task["expected_answer"]
        for row, _, result in built
        for task in result.tasks
        if task["kind"] == "mix"
    }
    slugs = {key: re.sub(r"[^A-Za-z0-9]+", "-", key[2]) for key in MIX_BY_HAND}  # as task IDs name keys
    assert {key: found.get((key[0], key[1], slugs[key])) for key in MIX_BY_HAND} == MIX_BY_HAND


# Computed by hand from the statements as printed (Apple's 10-K for fiscal 2024, Amazon's for 2024, in millions):
# Apple: operating cash flow 118,254 less payments for property, plant and equipment 9,447; term debt (non-current)
# 85,750 less cash and cash equivalents 29,943; net income 93,736 over equity averaged from 62,146 and 56,950 =
# 1.5741; accounts receivable 33,410 over net sales 391,035, times 365 = 31.19 days. Amazon: operating income 68,593
# over interest expense 2,406 = 28.51.
BY_HAND = {
    ("AAPL", "10-K", "free_cash_flow"): "$108,807 million",
    ("AAPL", "10-K", "net_debt"): "$55,807 million",
    ("AAPL", "10-K", "return_on_average_equity"): "157.4%",
    ("AAPL", "10-K", "days_sales_outstanding"): "31.2 days",
    ("AMZN", "10-K", "interest_coverage"): "28.5x",
}


@needs_real_filings
def test_each_formula_gives_what_an_analyst_computes_by_hand(built):
    found = {
        (row["ticker"], row["form"], task["figure"]): task["expected_answer"]
        for row, _, result in built
        for task in result.tasks
        if task["kind"] == "formula"
    }
    assert {key: found.get(key) for key in BY_HAND} == BY_HAND
    assert {figure for _, _, figure in found} == {formula.key for formula in FORMULAS}  # every formula somewhere


@needs_real_filings
def test_comparisons_set_two_companies_checked_figures_side_by_side_within_a_split(built):
    """Each side is its filing's own kept figure; the answer grades with each company's figure said next to its name
    in an analyst's sentence, and fails with the figures swapped; companies in different splits never meet."""
    grader = DeterministicGrader()
    splits = {"AAPL": "train", "AMZN": "train", "GOOGL": "train", "NVDA": "train", "TSLA": "test"}
    tasks = comparison_tasks([(_source(row), result, splits[row["ticker"]]) for row, _, result in built])
    assert {task["figure"] for task in tasks} == set(COMPARED)
    assert all("TSLA" not in task["ticker"] for task in tasks)  # alone in its split
    assert any("NVDA" in task["ticker"] for task in tasks)  # fiscal 2025 (January) beside calendar 2024
    own: dict[tuple[str, str], float] = {}  # (ticker, figure) -> the percentage its filing's own kept task states
    for row, _, result in built:
        for t in result.tasks:
            if row["form"] == "10-K" and t["kind"] == "ratio":
                own[(row["ticker"], t["figure"])] = t["canonical_answer"]["value"]
            elif row["form"] == "10-K" and t["kind"] == "change" and t["figure"] == "revenue":
                prior, now = (fact["value"] for fact in t["facts"])
                own[(row["ticker"], "revenue_growth")] = round((now - prior) / prior * 100, 1)
    for task in tasks:
        assert task["difficulty"]["documents"] == 2 and task["split"] == "train"
        (first, a), (second, b) = task["canonical_answer"]["value"].items()
        assert task["canonical_answer"]["higher"] == (first if a > b else second)
        for company, value in ((first, a), (second, b)):
            ticker = company.rsplit("(", 1)[1].rstrip(")")
            assert own[(ticker, task["figure"])] == value, (ticker, task["figure"])
        said = f"{second.split(',')[0].split(' (')[0]} came in at {b}% while {first.split(' (')[0]} had {a}%."
        assert grader.grade_sync(task["question"], task["expected_answer"], said).reward == 1.0, (
            task["expected_answer"],
            said,
        )
        swapped = f"{first.split(' (')[0]}: {b}%; {second.split(' (')[0]}: {a}%"
        assert grader.grade_sync(task["question"], task["expected_answer"], swapped).reward == 0.0, swapped


@needs_real_filings
def test_questions_are_unique_name_company_and_period_and_copy_no_sentence(built):
    for _, document, result in built:
        text = text_of(document).lower()
        questions = [task["question"] for task in result.tasks]
        assert len(questions) == len(set(questions))
        for task in result.tasks:
            question = task["question"]
            assert f"({task['ticker']})" in question and re.search(r"\b20\d\d\b", question), question
            words = re.sub(rf"{re.escape(task['company'])} \({task['ticker']}\)", " ", question).lower().split()
            for start in range(len(words) - 9):  # no ten words in a row of the filing's own text
                assert " ".join(words[start : start + 10]) not in text, question


def test_a_company_falls_in_one_split_by_its_cik_and_held_out_companies_go_to_test():
    assert split_of("0000320193", "AAPL") == split_of("320193", "AAPL")
    assert split_of("0000320193", "AAPL", held_out=["aapl"]) == "test"
    counts = Counter(split_of(str(cik), "X") for cik in range(1, 3001))
    assert set(counts) == set(SPLITS)
    assert 0.75 < counts["train"] / 3000 < 0.85 and 0.07 < counts["test"] / 3000 < 0.13
    assert {split_of(str(cik), "X", (0, 0, 1)) for cik in range(1, 200)} == {"test"}


@needs_real_filings
def test_the_command_writes_splits_rows_and_report(tmp_path):
    out = tmp_path / "tasks"
    assert main(["tasks", "build", "--corpus", str(EDGAR_REAL), "--out", str(out), "--hold-out", "NVDA,TSLA"]) == 0
    train, test = load_tasks(out / "train.jsonl"), load_tasks(out / "test.jsonl")
    assert {t.data["ticker"] for t in test} == {"NVDA", "TSLA", "NVDA+TSLA"}  # and their comparisons
    assert not {part for t in train for part in t.data["ticker"].split("+")} & {"NVDA", "TSLA"}
    rows = [json.loads(line) for line in (out / "nemo-gym" / "test.jsonl").read_text().splitlines()]
    assert len(rows) == len(test) and all(
        r["responses_create_params"]["input"][-1]["content"] == r["question"] for r in rows
    )
    report = json.loads((out / "report.json").read_text())
    assert report["tasks"] == len(train) + len(test) and report["splits"]["test"] == ["NVDA", "TSLA"]
    assert len(report["filings"]) == len(manifest())
    assert "facts checked agreed" in (out / "report.md").read_text()
    # the manifest: every filing read with the digest of its text, the builder's version, counts, file digests
    from finsec.taskgen.manifest import BUILDER_VERSION, document_digest

    built_manifest = json.loads((out / "manifest.json").read_text())
    assert built_manifest["builder"]["version"] == BUILDER_VERSION
    digests = {row["url"]: row["sha256"] for row in built_manifest["inputs"]}
    for row in manifest():
        text = (EDGAR_REAL / row["url_path"]).read_text(errors="replace")
        assert digests["https://www.sec.gov/" + row["url_path"]] == document_digest(text)
    assert sum(sum(kinds.values()) for kinds in built_manifest["counts"].values()) == len(train) + len(test)
    assert set(built_manifest["files"]) == {
        "train.jsonl",
        "test.jsonl",
        "nemo-gym/train.jsonl",
        "nemo-gym/test.jsonl",
        "report.json",
    }
    # a task file changed after its build is refused, naming why; moved out of the build's folder, it loads
    edited = (out / "test.jsonl").read_text().replace("What was", "What is", 1)
    (out / "test.jsonl").write_text(edited)
    with pytest.raises(TaskFileError, match="changed after its build"):
        load_tasks(out / "test.jsonl")
    (tmp_path / "mine.jsonl").write_text(edited)
    assert len(load_tasks(tmp_path / "mine.jsonl")) == len(test)
    assert len(load_tasks(out / "nemo-gym" / "train.jsonl")) == len(train)  # the unchanged ones still load


@needs_real_filings
def test_live_edgar_through_a_loopback_mirror_builds_the_same_tasks(tmp_path):
    folder, live = tmp_path / "folder", tmp_path / "live"
    common = ["--tickers", "AAPL", "--forms", "10-K"]
    assert main(["tasks", "build", "--corpus", str(EDGAR_REAL), "--out", str(folder), *common]) == 0
    with MirrorServer(EDGAR_REAL) as mirror:
        assert (
            main(
                [
                    "tasks",
                    "build",
                    "--live",
                    "--sec-www-url",
                    mirror.url,
                    "--sec-data-url",
                    mirror.url,
                    "--user-agent",
                    "finsec tests test@example.com",
                    "--out",
                    str(live),
                    *common,
                ]
            )
            == 0
        )
    split = next(p.name for p in folder.glob("*.jsonl"))
    assert (live / split).read_text() == (folder / split).read_text()


@pytest.mark.parametrize(
    "argv, said",
    [
        (["--live", "--user-agent", "x"], "--live needs --tickers"),
        (["--live", "--tickers", "AAPL", "--user-agent", ""], "--live needs --user-agent"),
        (["--corpus", "."], "not a folder in the sec.gov layout"),
        (["--corpus", ".", "--split", "0.8,0.2"], "--split"),
        (["--corpus", ".", "--filings-per-form", "0"], "--filings-per-form 0"),
        (["--corpus", ".", "--address", "local", "--workers", "0"], "--workers 0"),
        (["--corpus", ".", "--workers", "2"], "--workers needs --address"),
    ],
)
def test_usage_errors_say_what_to_fix(argv, said, tmp_path, capsys):
    assert main(["tasks", "build", "--out", str(tmp_path / "out"), *argv]) == 2
    assert said in capsys.readouterr().err


def test_live_without_a_reachable_edgar_is_one_line(tmp_path, capsys):
    with MirrorServer(_empty_mirror(tmp_path)) as mirror:  # a registry, but no submissions for the company
        code = main(
            [
                "tasks",
                "build",
                "--live",
                "--tickers",
                "EXM",
                "--sec-www-url",
                mirror.url,
                "--sec-data-url",
                mirror.url,
                "--user-agent",
                "t t@example.com",
                "--out",
                str(tmp_path / "out"),
            ]
        )
    assert code == 0 and "0 tasks from 0 filings" in capsys.readouterr().out


def _empty_mirror(root: Path) -> Path:
    (root / "files").mkdir(parents=True)
    (root / "files" / "company_tickers.json").write_text(
        json.dumps({"0": {"cik_str": 1, "ticker": "EXM", "title": "Example Corp"}})
    )
    return root


@needs_real_filings
def test_a_build_replaces_an_earlier_builds_splits_and_refuses_a_folder_of_other_files(tmp_path, capsys):
    out = tmp_path / "tasks"
    assert (
        main(
            [
                "tasks",
                "build",
                "--corpus",
                str(EDGAR_REAL),
                "--out",
                str(out),
                "--tickers",
                "AAPL,NVDA",
                "--forms",
                "10-K",
                "--hold-out",
                "NVDA",
            ]
        )
        == 0
    )
    assert (out / "test.jsonl").is_file()
    assert (
        main(
            [
                "tasks",
                "build",
                "--corpus",
                str(EDGAR_REAL),
                "--out",
                str(out),
                "--tickers",
                "AAPL",
                "--forms",
                "10-K",
                "--split",
                "1,0,0",
            ]
        )
        == 0
    )
    assert sorted(p.name for p in out.glob("*.jsonl")) == ["train.jsonl"]  # no test split left from the first
    assert sorted(p.name for p in (out / "nemo-gym").iterdir()) == ["train.jsonl"]
    (out / "notes.txt").write_text("mine")
    assert main(["tasks", "build", "--corpus", str(EDGAR_REAL), "--out", str(out), "--tickers", "AAPL"]) == 2
    assert "notes.txt" in capsys.readouterr().err and (out / "notes.txt").read_text() == "mine"


@needs_real_filings
def test_a_builds_tasks_are_measured_by_kind_and_difficulty(tmp_path, capsys):
    """The documented commands: build, play the tasks (the scripted policy, against `finsec serve --in-process` over
    the same filings), then `finsec tasks measure`: each group's pass@1 by kind and difficulty, and the task rows
    with their measured pass rates."""
    from finsec.net.ports import free_port
    from harness.serve_process import serving, stopped

    out = tmp_path / "tasks"
    built = ["tasks", "build", "--corpus", str(EDGAR_REAL), "--out", str(out), "--tickers", "AAPL,AMZN"]
    assert main([*built, "--forms", "10-K", "--split", "1,0,0"]) == 0
    tasks = out / "train.jsonl"
    port = free_port()
    server = serving(port, {"FINSEC_CORPUS_DIR": str(EDGAR_REAL.resolve())})
    try:
        run = tmp_path / "run.jsonl"
        url = f"http://127.0.0.1:{port}"
        every = str(len(load_tasks(tasks)))  # each task once
        played = main(
            ["rollouts", "--url", url, "--tasks", str(tasks), "-n", every, "-c", "8", "--out", str(run), "--quiet"]
        )
        assert played in (0, 1)  # 1: some episodes failed (a scripted policy cannot answer every kind)
    finally:
        stopped(server)
    capsys.readouterr()
    measured = tmp_path / "measured.jsonl"
    assert main(["tasks", "measure", str(run), "--tasks", str(tasks), "--out", str(measured)]) == 0
    table = capsys.readouterr().out.splitlines()
    rows = {line.split(" | ")[0]: line.split(" | ") for line in table[1:]}
    assert {"line_item", "formula", "mix", "comparison"} <= set(rows)
    rates = {
        kind: [float(r[6]) for line in table[1:] if (r := line.split(" | "))[0] == kind and r[6] != "-"]
        for kind in rows
    }
    assert max(rates["line_item"]) > max(rates["comparison"])  # a ladder: single facts pass more than comparisons
    written = [json.loads(line) for line in measured.read_text().splitlines()]
    assert len(written) == len(load_tasks(tasks)) and all(
        row["measured"] is None or 0 <= row["measured"]["pass_at_1"] <= 1 for row in written
    )

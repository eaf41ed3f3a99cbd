"""`finsec reverify RUN.jsonl`: a real run, played by `finsec rollouts` against the app in this process, graded
again without a server. A run "written before a grader change" is made two honest ways: its rows rewritten as
NeMo Gym's substring fallback (the grader the deterministic one replaced, contract §D.3) graded them, and a run
re-graded under another answer cap. Each time the episodes that must move are computed apart from reverify, by
calling the grader on each record, and reverify must report exactly those."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from deployments.cli import main
from deployments.inprocess import in_process_app
from deployments.settings import Settings
from finsec.corpus.generate import embedded_corpus_dir
from finsec.grading.deterministic import DeterministicGrader
from finsec.grading.identity import GRADING_VERSION
from finsec_client.records import EpisodeRecord, read_records, read_run
from finsec_client.tasks import embedded_tasks
from finsec_client.threaded_server import ThreadedServer
from harness.hostile import IN_PROCESS_SECRET

ROOT = Path(__file__).resolve().parents[3]
OLD_VERSION = "substring-fallback"
NEW_FIELDS = ("documents", "grader", "canonical_answer")


def task_rows() -> list[dict]:
    """Twelve corpus questions; a quarter with the expected amount restated in millions (the current grader passes
    the policy's figure, a substring test fails it), a quarter cut to its first digits (a substring test passes
    the figure, the current grader fails it), a quarter expecting a name no answer states (both fail it). The
    restated quarter carries the original as its canonical answer."""
    rows = []
    for i, task in enumerate(embedded_tasks()[:12]):
        row, expected = dict(task.data), task.expected_answer
        thousands = re.fullmatch(r"\$([\d,]+) thousand", expected)
        if i % 4 == 1:
            row["canonical_answer"] = expected
            if thousands:
                row["expected_answer"] = f"${int(thousands[1].replace(',', '')) / 1000:,.1f} million"
        elif i % 4 == 2:
            row["expected_answer"] = re.search(r"\d+", expected)[0]
        elif i % 4 == 3:
            row["expected_answer"] = "Delaware"
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> Path:
    """A run file written by `finsec rollouts` against the app in this process, both drivers."""
    folder = tmp_path_factory.mktemp("reverify")
    tasks, out = folder / "tasks.jsonl", folder / "run.jsonl"
    tasks.write_text("".join(json.dumps(row) + "\n" for row in task_rows()))
    app = in_process_app(
        Settings(app_name="reverify", num_shards=2, corpus_dir=embedded_corpus_dir(), cookie_secret=IN_PROCESS_SECRET)
    )
    with ThreadedServer(app.api, lifespan="on") as server:
        assert (
            main(
                [
                    "rollouts",
                    "--url",
                    server.url,
                    "-n",
                    "24",
                    "-c",
                    "6",
                    "--driver",
                    "environment-server",
                    "--driver",
                    "legacy-agent",
                    "--tasks",
                    str(tasks),
                    "--out",
                    str(out),
                    "--quiet",
                ]
            )
            == 0
        )
    return out


def records_of(path: Path) -> list[EpisodeRecord]:
    with path.open() as stream:
        return read_records(stream)


def write_run(path: Path, source: Path, rows: list[dict]) -> Path:
    """`rows` as a run file, after `source`'s first line (the run's options)."""
    with source.open() as stream:
        run = read_run(stream)
    path.write_text(json.dumps({"run": run}) + "\n" + "".join(json.dumps(row) + "\n" for row in rows))
    return path


def substring_grade(expected: str, answer: str) -> float:
    """NeMo Gym's fallback without a judge: the expected answer as a substring of the answer."""
    return 1.0 if expected.strip().lower() in answer.lower() else 0.0


def current(record: EpisodeRecord, max_answer_chars: int = 4000) -> float:
    return (
        DeterministicGrader(max_answer_chars)
        .grade_sync(record.question, record.expected_answer, record.final_answer)
        .reward
    )


def reverified(argv: list[str], capsys) -> dict:
    assert main(["reverify", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def moved_episodes(report: dict) -> set[int]:
    return {m["episode"] for m in report["moved"]}


def test_the_run_records_what_each_verify_row_said_graded_it(played):
    records = records_of(played)
    assert len(records) == 24 and all(r.outcome == "scored" for r in records)
    tasks = task_rows()
    for record in records:
        assert record.grader == {
            "name": "deterministic",
            "version": GRADING_VERSION,
            "max_answer_chars": 4000,
            "require_grounded_answer": False,
        }
        assert record.documents and all(isinstance(d, str) for d in record.documents)  # it parsed a filing
        row = tasks[record.task_index]
        assert record.canonical_answer == row.get("canonical_answer", row["expected_answer"])
        assert EpisodeRecord.from_json(json.loads(json.dumps(record.to_json()))) == record
    assert any(r.canonical_answer != r.expected_answer for r in records)


def test_a_file_written_before_rows_said_so_still_loads_and_re_grades(played, tmp_path, capsys):
    rows = [{k: v for k, v in r.to_json().items() if k not in NEW_FIELDS} for r in records_of(played)]
    old = write_run(tmp_path / "old.jsonl", played, rows)
    assert all((r.documents, r.grader, r.canonical_answer) == (None, None, None) for r in records_of(old))
    report = reverified([str(old)], capsys)
    assert report["summary"]["regraded"] == 24 and report["moved"] == []


def test_an_unchanged_grader_moves_nothing(played, capsys):
    report = reverified([str(played)], capsys)
    assert report["moved"] == []
    assert report["summary"] == {
        "regraded": 24,
        "moved": 0,
        "up": 0,
        "down": 0,
        "unchanged": 24,
        "skipped": {"masked": 0, "failed": 0, "no_answer": 0, "ungrounded": 0},
    }


def test_a_run_graded_before_the_grader_change_reports_exactly_the_episodes_that_moved(played, tmp_path, capsys):
    """The rows as the substring fallback graded them; the episodes whose current grade differs, computed by
    calling both graders directly, are exactly those reported, each with both rewards, versions and whys; the
    text output names the same episodes. Mutation: reporting by version, skipping the first or last episode, or
    comparing with the wrong reward, fails this."""
    records = records_of(played)
    rows, old_rewards = [], {}
    for record in records:
        row = record.to_json()
        old_rewards[record.episode] = row["reward"] = substring_grade(record.expected_answer, record.final_answer)
        row["judge_text"] = "substring match" if row["reward"] else "expected answer not found in the answer"
        row["judge_rating"] = 2 if row["reward"] else 0
        row["grader"] = {"name": "deterministic", "version": OLD_VERSION, "max_answer_chars": 4000}
        rows.append(row)
    old = write_run(tmp_path / "old.jsonl", played, rows)
    should_move = {r.episode for r in records if current(r) != old_rewards[r.episode]}
    ups = {e for e in should_move if old_rewards[e] == 0.0}
    assert ups and should_move - ups and set(old_rewards) - should_move  # moved up, down, and not at all

    report = reverified([str(old)], capsys)
    assert moved_episodes(report) == should_move
    assert report["summary"] == {
        "regraded": 24,
        "moved": len(should_move),
        "up": len(ups),
        "down": len(should_move - ups),
        "unchanged": 24 - len(should_move),
        "skipped": {"masked": 0, "failed": 0, "no_answer": 0, "ungrounded": 0},
    }
    by_episode = {r.episode: r for r in records}
    for moved in report["moved"]:
        record = by_episode[moved["episode"]]
        assert (moved["task_id"], moved["old_reward"], moved["new_reward"]) == (
            record.task_id,
            old_rewards[record.episode],
            current(record),
        )
        assert moved["old_grader"]["version"] == OLD_VERSION and moved["new_grader"]["version"] == GRADING_VERSION
        assert (
            moved["new_judge_text"]
            == DeterministicGrader().grade_sync(record.question, record.expected_answer, record.final_answer).judge_text
        )
        assert moved["old_judge_text"] in ("substring match", "expected answer not found in the answer")

    assert main(["reverify", str(old)]) == 0
    text = capsys.readouterr().out.splitlines()
    listed = {int(m[1]) for line in text if (m := re.match(r"episode (\d+)  task ", line))}
    assert listed == should_move
    assert any(f"{OLD_VERSION} -> deterministic {GRADING_VERSION}" in line for line in text)
    assert text[-1] == (
        f"24 episodes re-graded: {len(should_move)} moved ({len(ups)} up, "
        f"{len(should_move - ups)} down), {24 - len(should_move)} unchanged; 0 skipped"
    )


def test_another_answer_cap_moves_exactly_the_answers_it_cuts(played, capsys):
    """The run's rows name the cap they were graded with (4,000); reverified under 5 characters, the episodes
    whose grade that cap changes (computed by the grader itself) are the ones reported, all down, each saying
    answer_too_long."""
    records = records_of(played)
    should_move = {r.episode for r in records if current(r, 5) != r.reward}
    assert should_move and len(should_move) < len(records)
    report = reverified([str(played), "--max-answer-chars", "5"], capsys)
    assert moved_episodes(report) == should_move and report["summary"]["down"] == len(should_move)
    assert all(
        m["new_failure_kind"] == "finance_sec_search:answer_too_long"
        and m["old_failure_kind"] is None
        and m["new_grader"]["max_answer_chars"] == 5
        for m in report["moved"]
    )


def test_masked_failed_unanswered_and_ungrounded_episodes_are_skipped_never_reported(played, tmp_path, capsys):
    """Four rows rewritten as a masked verify, a failed episode, one with no answer string and a refusal under
    require_grounded_answer would leave them, each with a reward the current grader would change: all skipped."""
    rows = [r.to_json() for r in records_of(played)]
    right = [row for row in rows if row["reward"] == 1.0][:4]
    assert len(right) == 4
    masked, failed, unanswered, refused = right
    masked.update(
        reward=0.0,
        masked=True,
        failure_kind="session_lost",
        failure_reason="closed",
        grader=None,
        documents=None,
        judge_text=None,
        judge_rating=None,
    )
    failed.update(reward=None, failure={"kind": "transport", "route": "verify", "detail": "reset"})
    unanswered.update(final_answer=None, reward=0.0)
    refused.update(
        reward=0.0,
        failure_kind="finance_sec_search:ungrounded",
        judge_text="ungrounded: ...",
        grader={**refused["grader"], "require_grounded_answer": True},
    )
    path = write_run(tmp_path / "run.jsonl", played, rows)
    report = reverified([str(path)], capsys)
    assert report["moved"] == []
    assert report["summary"]["regraded"] == 20
    assert report["summary"]["skipped"] == {"masked": 1, "failed": 1, "no_answer": 1, "ungrounded": 1}
    assert main(["reverify", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "20 episodes re-graded: 0 moved (0 up, 0 down), 20 unchanged; 4 skipped (1 masked, 1 failed, 1 no answer, "
        "1 ungrounded)"
    ]


def test_usage_errors_are_one_line_and_exit_2(tmp_path, capsys):
    def error(argv: list[str]) -> str:
        assert main(["reverify", *argv]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("finsec: error: "), lines
        return lines[0]

    assert "does not exist" in error([str(tmp_path / "nope.jsonl")])
    (tmp_path / "text.jsonl").write_text("not json\n")
    assert "is not an episodes JSONL" in error([str(tmp_path / "text.jsonl")])
    (tmp_path / "other.jsonl").write_text('{"a": 1}\n[1, 2]\n')
    assert "is not an episodes JSONL" in error([str(tmp_path / "other.jsonl")])
    (tmp_path / "empty.jsonl").write_text('{"run": {}}\n')
    assert "holds no episodes" in error([str(tmp_path / "empty.jsonl")])
    assert "is not an episodes JSONL" in error([str(tmp_path)])
    assert "at least 1" in error([str(tmp_path / "empty.jsonl"), "--max-answer-chars", "0"])


def test_reverify_has_help_and_loads_no_server_module(played):
    with pytest.raises(SystemExit) as exit_:
        main(["reverify", "--help"])
    assert exit_.value.code == 0
    probe = (
        "import sys\nfrom finsec_client.cli import main\nassert main(['reverify', sys.argv[1]]) == 0\n"
        "print('LOADED', sorted({'ray', 'deployments', 'session_store', 'fastapi'} & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(played)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and out.stdout.rstrip().endswith("LOADED []"), out.stdout[-500:] + out.stderr[-500:]

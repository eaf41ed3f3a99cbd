"""`finsec view`: run files as one page that works offline, tested in Debian's chromium (harness/browser.py).

The runs hold what a model, a filing or a server could write: markup in an answer, a `</script>` in a reply, a
`javascript:` URL, a lone surrogate, the page's own template slots. All of it must show as text and run nothing;
the page's own script must run (its Content-Security-Policy names it by digest) and draw every episode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finsec_client.cli import main
from finsec_client.client import Call
from finsec_client.records import EpisodeRecord, Failure, RecordWriter
from harness.browser import browser_page

ANSWER = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> $979,207 thousand'
REPLY = "</script><script>window.pwned = 4</script><!-- {{data}} {{script}}"
URL = "javascript:window.pwned = 3"
LONG = "revenue " * 400


def _record(episode: int, task: str, **fields) -> EpisodeRecord:
    return EpisodeRecord(
        episode=episode,
        driver="environment-server",
        policy="scripted",
        task_index=int(task),
        repeat=0,
        taskset="t",
        task_id=task,
        question=f"question of task {task}",
        expected_answer="$979,207 thousand",
        **fields,
    )


def _calls(*calls: Call) -> list[dict]:
    return [call.to_json() for call in calls]


def _write(path: Path, records: list[EpisodeRecord]) -> Path:
    with path.open("w") as stream:
        writer = RecordWriter(stream)
        writer.write_run({"policy": "scripted", "episodes": len(records)})
        for record in records:
            writer.write(record)
    return path


@pytest.fixture
def runs(tmp_path) -> list[Path]:
    seeded = Call("seed_session", 200, 12.0, body='{"resources_session_id": "s"}', reply="{}")
    first = [
        _record(
            0,
            "1",
            calls=_calls(seeded, Call("parse_html_page", 200, 30.0, body=json.dumps({"url": URL}), reply=LONG)),
            tools=["parse_html_page", "submit_final_result"],
            final_answer="$979,207 thousand",
            reward=1.0,
            grader={"name": "deterministic"},
            judge_text="matched",
        ),
        _record(
            1,
            "2",
            calls=_calls(seeded, Call("retrieve_information", 404, 3.0, reply=REPLY)),
            final_answer=ANSWER,
            reward=0.0,
            masked=True,
            failure_kind="session_lost",
            failure_reason="the session's shard restarted",
        ),
        _record(
            2,
            "2",
            calls=_calls(seeded, Call("parse_html_page", None, 5000.0, error="ClientOSError: reset")),
            failure=Failure("transport", "parse_html_page", "no reply"),
        ),
        _record(3, "3", calls=_calls(seeded), final_answer="\ud800 {{style}}", reward=0.0),
    ]
    second = [_record(0, "1", calls=_calls(seeded), final_answer="$979,207 thousand", reward=1.0)]
    return [_write(tmp_path / "a.jsonl", first), _write(tmp_path / "b.jsonl", second)]


def _rows(page) -> list[str]:
    return page.locator("#episodes tbody tr.episode").evaluate_all(
        "rows => rows.map(r => r.dataset.run + ':' + r.dataset.episode)"
    )


def test_the_page_shows_every_episode_as_text_and_runs_nothing_it_was_given(runs, tmp_path, screenshots):
    out = tmp_path / "view.html"
    assert main(["view", *map(str, runs), "--out", str(out), "--no-open"]) == 0
    with browser_page() as page:
        page.goto(out.as_uri())
        assert page.text_content("#count") == "5 of 5 episodes"  # the page's own script ran
        assert page.locator("#runs .card").count() == 2  # side by side
        page.locator("tr.episode[data-run='0'][data-episode='1']").click()
        answer = page.locator("tr.detail dd").nth(2)
        assert answer.text_content() == ANSWER
        assert page.locator("tr.detail").text_content().count("session_lost: the session's shard restarted") == 1
        assert REPLY in page.locator("tr.detail").text_content()  # short: shown unfolded
        page.locator("tr.episode[data-run='0'][data-episode='0']").click()
        assert URL in page.locator("tr.detail").first.text_content()
        folded = page.locator("tr.detail details").first
        assert folded.get_attribute("open") is None and f"({len(LONG)} characters)" in folded.text_content()
        page.locator("tr.episode[data-run='0'][data-episode='3']").click()
        assert "{{style}}" in page.locator("tr.detail").last.text_content()
        assert page.evaluate("window.pwned") is None
        assert page.locator("a, img, iframe").count() == 0 and page.locator("script").count() == 2
        page.screenshot(path=screenshots / "run-viewer.png", full_page=True)
        assert page.errors == []


def test_filters_pick_episodes_by_run_task_outcome_reward_tool_error_and_text(runs, tmp_path):
    out = tmp_path / "view.html"
    assert main(["view", *map(str, runs), "--out", str(out), "--no-open"]) == 0
    with browser_page() as page:
        page.goto(out.as_uri())
        page.select_option("select[name=outcome]", "masked")
        assert _rows(page) == ["0:1"]
        page.select_option("select[name=outcome]", "")
        page.select_option("select[name=task]", "t/2")
        assert _rows(page) == ["0:1", "0:2"]
        page.select_option("select[name=task]", "")
        page.fill("input[name=reward_min]", "0.5")
        assert _rows(page) == ["0:0", "1:0"]
        page.select_option("select[name=run]", "1")
        assert _rows(page) == ["1:0"]
        page.select_option("select[name=run]", "")
        page.fill("input[name=reward_min]", "")
        page.check("input[name=tool_error]")
        assert _rows(page) == ["0:1", "0:2"]  # a 404 and no reply, on tools' routes
        page.uncheck("input[name=tool_error]")
        page.fill("input[name=text]", "task 3")
        assert _rows(page) == ["0:3"]
        assert page.text_content("#count") == "1 of 5 episodes"
        assert page.errors == []


def test_each_run_shows_its_rewards_latency_and_profile(runs, tmp_path):
    out = tmp_path / "view.html"
    assert main(["view", *map(str, runs), "--out", str(out), "--no-open", "-k", "1"]) == 0
    with browser_page() as page:
        page.goto(out.as_uri())
        first = page.locator("#runs .card").first
        counts = first.locator("[data-testid=histogram] div").evaluate_all("bars => bars.map(b => +b.dataset.count)")
        assert counts == [1, 0, 0, 0, 0, 0, 0, 0, 0, 1]  # scored: rewards 1 and 0 (neither masked nor failed)
        latency = first.locator("table.latency tbody tr").evaluate_all(
            "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
        )
        assert ["seed_session", "4", "12.0", "12.0", "0"] in latency
        assert ["parse_html_page", "2", "5000.0", "5000.0", "1"] in latency
        profile = (
            page.locator("#profiles table")
            .first.locator("tbody tr")
            .evaluate_all("rows => rows.map(r => [r.cells[0].textContent, r.cells[2].textContent])")
        )
        assert profile == [["t/3", "0.00"], ["t/1", "1.00"], ["t/2", "-"]]  # hardest first; t/2: none scored
        assert page.errors == []


def test_the_command_refuses_to_replace_a_page_and_reads_a_bad_file_as_a_usage_error(runs, tmp_path, capsys):
    page = runs[0].with_suffix(".html")
    assert main(["view", str(runs[0]), "--no-open"]) == 0 and page.is_file()  # beside the run file
    before = page.read_text()
    assert main(["view", str(runs[1]), "--out", str(page), "--no-open"]) == 2
    assert "exists: --force replaces it" in capsys.readouterr().err and page.read_text() == before
    assert main(["view", str(runs[1]), "--out", str(page), "--no-open", "--force"]) == 0
    assert page.read_text() != before
    nan = tmp_path / "nan.jsonl"
    nan.write_text(runs[1].read_text().replace('"seconds": 0.0', '"seconds": NaN'))
    assert main(["view", str(nan), "--no-open"]) == 2
    assert "a value the page cannot show" in capsys.readouterr().err
    for command in ("view", "profile"):  # a reward that is no number is no run file
        nan.write_text(runs[1].read_text().replace('"reward": 1.0', '"reward": NaN'))
        assert main([command, str(nan), "--no-open"][: 2 + (command == "view")]) == 2
        assert "reward nan is not a finite number" in capsys.readouterr().err
    assert main(["view", str(tmp_path / "missing.jsonl"), "--no-open"]) == 2

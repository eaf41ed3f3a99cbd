"""The live page (`/ui`): the app's health and any session's story, read by a person in Debian's chromium
(harness/browser.py) from `finsec serve --in-process` over loopback; and who may read its data, over ASGI.

Its data holds what agents wrote (task IDs, document keys, URLs): all of it must show as text and run nothing, and
no caller without the admin token may see a session it could not already read."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from finsec.corpus.generate import questions
from finsec.net.ports import free_port
from harness.bodies import close_body, episode_seed, new_session_id, verify_body
from harness.browser import browser_page
from harness.inprocess import InProcess
from harness.serve_process import serving, stopped

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "live-page-admin-token-for-the-tests-0123456789"
HOSTILE_TASK = '<img src=x onerror="window.pwned = 1"><script>window.pwned = 2</script>'
FILING = questions()[0]


@contextmanager
def finsec_serve(**env: str) -> Iterator[str]:
    """`finsec serve configs/serve.yaml --in-process` with these FINSEC_ settings, until the test ends."""
    port = free_port()
    server = serving(port, {f"FINSEC_{k.upper()}": v for k, v in env.items()}, ROOT / "configs/serve.yaml")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stopped(server)


def _episode(url: str) -> str:
    """An episode left open: seeded (a task ID that is markup), a filing stored, a verify scored."""
    sid = new_session_id()
    with httpx.Client(base_url=url, timeout=30) as client:
        seed = episode_seed(sid)
        seed["task_id"]["task_id"] = HOSTILE_TASK
        assert client.post("/seed_session", json=seed).status_code == 200
        stored = client.post("/parse_html_page", json={"url": FILING["url"], "key": "filing"})
        assert "SUCCESS" in stored.json()["results"], stored.text
        row = client.post("/verify", json=verify_body(FILING["expected_answer"], FILING["expected_answer"]))
        assert row.json()["reward"] == 1.0, row.text
    return sid


def test_the_live_page_shows_the_app_and_a_stalled_sessions_story_as_text(screenshots):
    with finsec_serve(admin_token=TOKEN, stalled_after_seconds="1") as url:
        sid = _episode(url)
        with httpx.Client(base_url=url, timeout=30) as other:
            assert other.post("/seed_session", json={}).status_code == 200  # an agent-run session
        with browser_page() as page:
            page.goto(url + "/ui")
            page.locator("#token").wait_for()  # the data needs the token: the page asks for it, showing nothing
            assert page.locator("#live").is_hidden()
            page.fill("#token input[name=token]", TOKEN)
            page.click("#token button")
            page.locator("#stalled tbody tr").nth(1).wait_for()  # both sessions idle past 1 s
            page.locator("#routes tbody td", has_text="/verify").wait_for()  # the replica's next snapshot
            facts = page.locator("#sessions dd").all_text_contents()
            assert facts[:3] == ["2", "1", "1"] and facts[3] == "2"  # open, episodes, agent runs; stalled
            routes = page.locator("#routes tbody tr td:first-child").all_text_contents()
            assert {"/seed_session", "/parse_html_page", "/verify"} <= set(routes)
            assert page.locator("#replicas tbody tr").count() == 1
            assert page.locator("#rewards tbody tr").first.locator("td").all_text_contents()[:3] == ["1m", "1", "1.000"]
            page.locator("#stalled button", has_text=sid).click()
            page.wait_for_selector("#documents tbody tr")
            inspected = page.text_content("#inspected")
            assert HOSTILE_TASK in inspected and FILING["url"] in inspected  # as text
            assert page.locator("#calls tbody tr").count() == 3  # seed, parse, verify
            assert page.locator("#documents tbody tr td").first.text_content() == "filing"
            assert page.locator("#verdicts tbody tr td").first.text_content() == "1"  # its verdict: reward 1
            page.screenshot(path=screenshots / "live-page.png", full_page=True)
            assert page.evaluate("window.pwned") is None
            assert page.locator("#inspected img, #inspected script, #inspected a").count() == 0
            assert page.errors == []


def test_the_live_data_needs_the_admin_token_and_names_no_session_without_one():
    with InProcess(admin_token=TOKEN, stalled_after_seconds=10, max_rollout_time_seconds=60) as app:
        sid = new_session_id()
        assert app.post("/seed_session", json=episode_seed(sid)).status_code == 200
        app.clock.advance(11)
        assert app.get("/ui/state").status_code == 401
        assert app.get("/ui/state", headers={"Authorization": "Bearer " + TOKEN[:-1]}).status_code == 401
        assert app.get(f"/ui/session/{sid}").status_code == 401
        state = app.get("/ui/state", headers={"Authorization": "Bearer " + TOKEN}).json()
        assert state["stalled"]["count"] == 1 and [s["id"] for s in state["stalled"]["idlest"]] == [sid]
        shown = app.get(f"/ui/session/{sid}", headers={"Authorization": "Bearer " + TOKEN}).json()
        assert shown["open"] and shown["kind"] == "episode" and shown["idle_seconds"] == 11
        assert shown["budget_left_seconds"] == 60 - 11  # the tools' time budget
        too_long = app.get("/ui/session/" + "s" * 257, headers={"Authorization": "Bearer " + TOKEN})
        assert too_long.status_code == 422
        assert app.post("/close_session", json=close_body(sid)).status_code == 200
        shown = app.get(f"/ui/session/{sid}", headers={"Authorization": "Bearer " + TOKEN}).json()
        assert shown["open"] is False and shown["fence_cause"] == "closed"
    with InProcess(stalled_after_seconds=10) as app:
        assert app.post("/seed_session", json=episode_seed(new_session_id())).status_code == 200
        app.clock.advance(11)
        state = app.get("/ui/state").json()  # as /status answers: no token is set
        assert state["stalled"]["count"] == 1 and state["stalled"]["idlest"] == []  # counted, never named
        inspected = app.get(f"/ui/session/{new_session_id()}")
        assert inspected.status_code == 403 and "admin_token" in inspected.json()["detail"]


@pytest.mark.parametrize("path", ["/ui", "/ui/dom.js", "/ui/app.js", "/ui/style.css"])
def test_the_page_is_the_apps_own_and_runs_only_its_own_script(path):
    with InProcess() as app:
        served = app.get(path)
        assert served.status_code == 200 and served.content
        policy = served.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "default-src 'none'" in policy
        assert served.headers["x-content-type-options"] == "nosniff"
    if path == "/ui":
        assert "http" not in served.text.split("<body>")[0]  # nothing from elsewhere

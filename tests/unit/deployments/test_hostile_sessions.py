"""Sessions against a hostile agent, in one process (harness/inprocess.py): a cookie it forged or edited never
speaks for another session (contract §B.1, Decision 14), and one session never reads, overwrites or closes
another's documents (§C.1, §C.4, §E.1).

Each test names the mutation it exists to catch.
"""

from __future__ import annotations

import pytest

from harness.bodies import close_body, cookie_claims, episode_seed, new_session_id, verify_body
from harness.hostile import company_name, cookie_of, filing_url, signed_cookie, with_claims
from harness.inprocess import InProcess

VICTIM, OTHER = "HLXR1", "BRWN2"  # two issuers of the embedded corpus; their names tell their texts apart


@pytest.fixture
def app():
    with InProcess(edgar_search_mode=None) as running:  # no full-text index to build: these need none
        yield running


def results(response) -> str:
    assert response.status_code == 200, response.text
    return response.json()["results"]


def parse(app, client, key: str, ticker: str = VICTIM):
    return app.post("/parse_html_page", client=client, json={"url": filing_url(ticker), "key": key})


def retrieve(app, client, prompt: str, **extra):
    return app.post("/retrieve_information", client=client, json={"prompt": prompt, **extra})


# ----- forged and tampered cookies (§B.1: a bad signature or an expired cookie is a fresh, random session) -----


def _victims(app):
    """An episode session and an agent-run session, each holding the victim's filing under "doc"."""
    episode, agent_run = app.new_client(), app.new_client()
    episode_sid = new_session_id()
    app.post("/seed_session", client=episode, json=episode_seed(episode_sid))
    agent_run_sid = cookie_claims(app.post("/seed_session", client=agent_run, json={}), app.settings.cookie_name)[
        "session_id"
    ]
    for client in (episode, agent_run):
        assert results(parse(app, client, "doc")).startswith("SUCCESS")
    return {episode_sid: episode, agent_run_sid: agent_run}


def _forgeries(app, victim_sid: str, victim_cookie: str) -> dict[str, str]:
    own = app.new_client()
    app.post("/seed_session", client=own, json={})  # the attacker's own, validly signed cookie
    own_cookie = cookie_of(own, app.settings.cookie_name)
    claims = {"session_id": victim_sid}
    head, signature = victim_cookie.rsplit(".", 1)
    # The signature's first character: its last one carries base64 padding bits that decoding ignores.
    flipped = f"{head}.{'B' if signature[0] == 'A' else 'A'}{signature[1:]}"
    return {
        "signed with another secret": signed_cookie(claims, secret="guessed-secret"),
        "signed with the cookie name as secret": signed_cookie(claims, secret=app.settings.cookie_name),
        "own cookie, session_id swapped": with_claims(own_cookie, claims),
        "own cookie, claims of a seeded session": with_claims(own_cookie, {**claims, "seed_kind": "episode"}),
        "victim cookie, signature changed": flipped,
        "victim cookie, signature dropped": victim_cookie.rsplit(".", 1)[0],
        "expired (right secret)": signed_cookie(claims, age_seconds=app.settings.cookie_max_age_seconds + 60),
        "unsigned payload": with_claims("x.y.z", claims).rsplit(".", 2)[0],
        "garbage": "garbage",
        "empty": "",
        "dots": "...",
        "json": f'{{"session_id":"{victim_sid}"}}',
        "long": "A" * 4_000,
    }


def test_a_forged_or_tampered_cookie_is_a_fresh_random_session(app):
    """§B.1, Decision 14. Mutation: trusting a cookie's claims without its signature (or past its max age)
    fails this: the forged request would read, overwrite or release the victim's documents."""
    victims = _victims(app)
    name = app.settings.cookie_name
    seen_ids = set(victims)
    for victim_sid, victim in victims.items():
        for label, forged in _forgeries(app, victim_sid, cookie_of(victim, name)).items():
            attacker = app.new_client()
            headers = {"cookie": f"{name}={forged}"}

            lost = app.post(
                "/retrieve_information", client=attacker, headers=headers, json={"prompt": "revenue {{doc}}"}
            )
            assert lost.status_code == 404 and lost.json()["failure_kind"] == "session_lost", label
            fresh = cookie_claims(lost, name)["session_id"]
            assert fresh not in seen_ids, label  # a fresh random ID: not the victim's, not anyone's before
            seen_ids.add(fresh)
            assert company_name(VICTIM) not in lost.text, label

            overwrite = app.post(
                "/parse_html_page", client=attacker, headers=headers, json={"url": filing_url(OTHER), "key": "doc"}
            )
            assert overwrite.status_code == 404, label
            assert cookie_claims(overwrite, name)["session_id"] != victim_sid, label

            verified = app.post("/verify", client=attacker, headers=headers, json=verify_body())
            # Not scored as an unknown session (Decision 6): a cookie we cannot read may stand for a session we
            # lost (a redeploy with a new secret). Masked, and it releases nothing.
            assert verified.status_code == 200, label
            assert (verified.json()["mask_sample"], verified.json()["failure_kind"]) == (True, "session_lost"), label
            assert cookie_claims(verified, name)["session_id"] != victim_sid, label

            reseeded = app.post("/seed_session", client=attacker, headers=headers, json={})
            assert reseeded.status_code == 200, label  # an agent-run seed of a fresh session, not a reset of the victim
            assert cookie_claims(reseeded, name)["session_id"] != victim_sid, label

    for victim_sid, victim in victims.items():  # untouched and still readable by its owner only
        assert app.describe(victim_sid)["open"] and app.describe(victim_sid)["documents"] == ["doc"]
        reply = results(retrieve(app, victim, "company name registrant {{doc}}"))
        assert company_name(VICTIM) in reply and company_name(OTHER) not in reply


def test_the_cookie_always_names_the_session_it_was_signed_for(app):
    """The positive control of the test above: the same request with the victim's real cookie reads its text,
    so the refusals there come from the forgery, not from a request that never could succeed."""
    victims = _victims(app)
    name = app.settings.cookie_name
    for victim_sid, victim in victims.items():
        replay = app.new_client()
        response = app.post(
            "/retrieve_information",
            client=replay,
            json={"prompt": "registrant {{doc}}"},
            headers={"cookie": f"{name}={cookie_of(victim, name)}"},
        )
        assert company_name(VICTIM) in results(response)
        assert cookie_claims(response, name)["session_id"] == victim_sid


# ----- two sessions, the same key names (§C.1: storage is per session ID) -----


def _two_sessions(app):
    a, b = app.new_client(), app.new_client()
    sa, sb = new_session_id(), new_session_id()
    app.post("/seed_session", client=a, json=episode_seed(sa, rollout="ra"))
    app.post("/seed_session", client=b, json=episode_seed(sb, rollout="rb"))
    assert results(parse(app, a, "doc", VICTIM)).startswith("SUCCESS")
    assert results(parse(app, b, "doc", OTHER)).startswith("SUCCESS")
    return (sa, a), (sb, b)


def test_sessions_with_the_same_key_names_never_see_each_others_documents(app):
    """§C.1. Mutation: storing documents by key alone (not by session and key) fails this."""
    (sa, a), (sb, b) = _two_sessions(app)
    reply_a = results(retrieve(app, a, "registrant name {{doc}}"))
    reply_b = results(retrieve(app, b, "registrant name {{doc}}"))
    assert company_name(VICTIM) in reply_a and company_name(OTHER) not in reply_a
    assert company_name(OTHER) in reply_b and company_name(VICTIM) not in reply_b

    # B overwrites its "doc" and adds a key of its own: A's "doc" and A's key list do not change
    assert results(parse(app, b, "doc", "QMTF3")).startswith("WARNING: The key already exists")
    listed = results(parse(app, b, "b-only", OTHER))
    assert "b-only" in listed
    assert app.describe(sa)["documents"] == ["doc"]
    assert company_name(VICTIM) in results(retrieve(app, a, "registrant name {{doc}}"))
    assert "b-only" not in results(parse(app, a, "a-only"))  # A's parse reply lists A's keys only


@pytest.mark.parametrize("placeholder", ["b-only", "{sb}/b-only", "{sb}:b-only", "../{sb}/b-only", "*", "b-only "])
def test_a_placeholder_cannot_name_another_sessions_key(app, placeholder):
    """§E.1 steps 4-5: a key is looked up in the caller's storage only; the missing-key error lists only the
    caller's keys. Mutation: a placeholder that resolves a session prefix, or a store-wide key lookup."""
    (sa, a), (sb, b) = _two_sessions(app)
    assert results(parse(app, b, "b-only", OTHER)).startswith("SUCCESS")
    reply = results(retrieve(app, a, "registrant {{" + placeholder.format(sb=sb) + "}}"))
    assert reply.startswith("ERROR: The key") and "not found" in reply
    assert reply.split("Available keys are: ")[1].startswith("doc.")
    assert company_name(OTHER) not in reply and sb not in reply.split("Available keys are: ")[1]


def test_a_close_names_its_session_by_body_id_and_never_touches_the_callers(app):
    """§C.4: close works by the body's ID, with or without (or with another) cookie; it checks the episode.
    Mutation: closing the cookie's session instead of the body's, or skipping the episode check, fails this."""
    (sa, a), (sb, b) = _two_sessions(app)
    refused = app.post("/close_session", client=a, json=close_body(sb, rollout="ra"))  # A's episode, B's ID
    assert refused.status_code == 409 and "rb" in refused.json()["detail"]
    assert app.describe(sb)["open"] and app.describe(sb)["documents"] == ["doc"]
    assert app.describe(sa)["open"] and app.describe(sa)["documents"] == ["doc"]

    closed = app.post("/close_session", client=a, json=close_body(sb, rollout="rb"))  # B's own episode
    assert closed.status_code == 200 and closed.json() == {"resources_session_id": sb}
    assert not app.describe(sb)["open"] and app.describe(sb)["fenced"]
    assert app.describe(sa)["open"] and app.describe(sa)["documents"] == ["doc"]
    assert cookie_claims(closed, app.settings.cookie_name)["session_id"] == sa  # A's cookie still names A
    assert company_name(VICTIM) in results(retrieve(app, a, "registrant {{doc}}"))  # and A still works
    assert retrieve(app, b, "registrant {{doc}}").status_code == 404  # B is gone for B, too


# ----- keys that look like paths, encodings, or worse (§A.8: a key is a plain name in the session's storage) -----

PLAIN_KEYS = [
    "../x",
    "../../etc/passwd",
    "%2e%2e",
    "%2e%2e%2fx",
    "..\\x",
    "/abs",
    ".",
    "..",
    " doc ",
    "k" * 256,
    "доход 📈",
    "ключ/..",
    "a:b",
    "NUL",
    "<script>",
    "a\u200bb",
]
REFUSED_KEYS = {
    "k" * 257: "at most 256",
    "a\x00b": "control characters",
    "a\nb": "control characters",
    "a\tb": "control characters",
    "a\x1bb": "control characters",
    "a\x7fb": "control characters",
    "a\x85b": "control characters",
    "a\u2028b": "control characters",
    "a\u2029b": "control characters",
    "{{doc}}": "must not contain '{'",
    "a}b": "must not contain",
}


def test_path_like_and_unicode_keys_are_plain_keys(app):
    """Each key stores and reads back its own document and nothing else: no key is a path, a pattern, or a
    way into another session. Mutation: normalising keys (so "../x" and "x", or "%2e%2e" and "..", collide)."""
    (sa, a), (sb, b) = _two_sessions(app)
    for key in PLAIN_KEYS:
        assert results(parse(app, a, key, VICTIM)).startswith("SUCCESS"), key
        assert results(parse(app, b, key, OTHER)).startswith("SUCCESS"), key
    assert sorted(app.describe(sa)["documents"]) == sorted({"doc", *PLAIN_KEYS})
    for key in PLAIN_KEYS:
        reply = results(retrieve(app, a, "registrant name {{" + key + "}}"))
        assert company_name(VICTIM) in reply and company_name(OTHER) not in reply, key
    assert sorted(app.describe(sb)["documents"]) == sorted({"doc", *PLAIN_KEYS})


def test_keys_with_control_characters_or_braces_get_a_tool_error_that_says_what_to_fix(app):
    """A key with a line break would make the key list of every later parse reply (one key per line, §A.8
    step 5) ambiguous; braces could never be named by a {{key}} placeholder. Mutation: dropping a check."""
    (sa, a), _ = _two_sessions(app)
    for key, says in REFUSED_KEYS.items():
        reply = results(parse(app, a, key))
        assert reply.startswith("ERROR:") and says in reply, (key, reply)
    assert app.describe(sa)["documents"] == ["doc"]

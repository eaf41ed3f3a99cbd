"""The load generator carries each rollout's session cookie by hand (harness/cookies.py, as bench/loadgen.py uses
it): what a reply sets is sent with the next request, a Max-Age of 0 deletes it, and nothing crosses from one rollout
to the next."""

from __future__ import annotations

from harness import cookies as loadgen


def test_a_set_cookie_is_sent_back_with_its_value_only():
    cookies: dict[str, str] = {}
    loadgen.take_cookies(["finsec_session=abc.def; path=/; Max-Age=1209600; httponly; samesite=lax"], cookies)
    assert loadgen.cookie_header(cookies) == {"Cookie": "finsec_session=abc.def"}


def test_a_newer_value_replaces_the_old_and_max_age_zero_deletes():
    cookies = {"finsec_session": "old", "other": "1"}
    loadgen.take_cookies(["finsec_session=new; path=/"], cookies)
    assert cookies == {"finsec_session": "new", "other": "1"}
    loadgen.take_cookies(["other=; path=/; Max-Age=0"], cookies)
    assert loadgen.cookie_header(cookies) == {"Cookie": "finsec_session=new"}


def test_no_cookie_means_no_header():
    cookies: dict[str, str] = {}
    loadgen.take_cookies([], cookies)
    loadgen.take_cookies(["=orphan; path=/"], cookies)  # a nameless pair is not a cookie
    assert loadgen.cookie_header(cookies) is None

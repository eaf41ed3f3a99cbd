"""The load generator's session cookie, carried by hand (bench/loadgen.py; tests/unit/harness/test_loadgen_cookies.py)."""

from __future__ import annotations


def take_cookies(set_cookies: list[str], cookies: dict[str, str]) -> None:
    """Keep what a reply's Set-Cookie headers set (a Max-Age of 0 deletes): the session cookie, contract §A.0."""
    for raw in set_cookies:
        pair, _, attributes = raw.partition(";")
        name, _, value = pair.strip().partition("=")
        if "max-age=0" in attributes.lower().replace(" ", ""):
            cookies.pop(name, None)
        elif name:
            cookies[name] = value


def cookie_header(cookies: dict[str, str]) -> dict[str, str] | None:
    return {"Cookie": "; ".join(f"{name}={value}" for name, value in cookies.items())} if cookies else None

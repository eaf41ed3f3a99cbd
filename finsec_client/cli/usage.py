"""Usage errors: said in one line, exit status 2, no traceback. And the checks that raise them."""

from __future__ import annotations

import difflib
import os
import socket
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

import httpx

__all__ = [
    "check_model_up",
    "check_port_free",
    "check_server_up",
    "check_url",
    "default_url",
    "did_you_mean",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "one_line",
    "UsageError",
]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Something the user can fix: a bad URL, a server that is not up, a bad config, a port in use."""


def one_line(error: BaseException | str) -> str:
    """An error (or its text) as a usage message quotes it: one line of at most 300 characters."""
    text = " ".join(str(error).split())
    return (text or type(error).__name__)[:300]


def did_you_mean(given: str, known: Iterable[str], shown: Callable[[str], str] = str, cutoff: float = 0.75) -> str:
    """ " (did you mean X?)" for the known name closest to a misspelt one, or "" when none is close."""
    close = difflib.get_close_matches(given, sorted(known), n=1, cutoff=cutoff)
    return f" (did you mean {shown(close[0])}?)" if close else ""


def check_url(url: str, what: str = "--url") -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{what} {url!r} is not an http(s) URL such as http://127.0.0.1:8000")
    try:
        _ = parts.port  # urlsplit checks the port only when asked
    except ValueError:
        raise UsageError(f"{what} {url!r} has a bad port") from None
    if parts.query or parts.fragment:
        raise UsageError(f"{what} {url!r} must not have a query or fragment")
    return url.rstrip("/")


def check_server_up(url: str, timeout: float = 5.0) -> None:
    """A finsec server answers at `url` (GET /healthz)."""
    try:
        response = httpx.get(url + "/healthz", timeout=timeout)
    except httpx.HTTPError as error:
        raise UsageError(
            f"no server answers at {url} ({type(error).__name__}: {error}); start one with "
            "`finsec serve`, or leave out --url to start one in process"
        ) from None
    if response.status_code != 200:
        raise UsageError(f"the server at {url} is not ready: GET /healthz answered {response.status_code}")


def check_model_up(url: str, api_key: str | None, key_variable: str, timeout: float = 5.0) -> None:
    """An OpenAI-compatible endpoint answers at `url` and takes the key (GET /models): checked before the first
    episode, so a dead endpoint is one line instead of a run of failed episodes."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.get(url + "/models", headers=headers, timeout=timeout)
    except httpx.HTTPError as error:
        raise UsageError(
            f"--model-url: nothing answers at {url} ({one_line(error)}); start the model server or fix the URL"
        ) from None
    if response.status_code in (401, 403):
        raise UsageError(
            f"--model-url: {url} refuses the key (HTTP {response.status_code}): put the endpoint's key "
            f"in ${key_variable}, or name another variable with --model-api-key-env"
        )


def default_url() -> str | None:
    """$FINSEC_URL: the server the commands talk to when --url is left out."""
    return os.environ.get("FINSEC_URL") or None


def check_port_free(host: str, port: int) -> None:
    """Nothing listens on `port`. The probe binds with SO_REUSEADDR, as the servers we start do (uvicorn,
    HAProxy): the connections a stopped server leaves in TIME_WAIT (for a minute) do not stop them binding,
    so they must not stop the check either. A socket listening on the port still fails the bind (Linux)."""
    if not 0 < port < 65536:
        raise UsageError(f"port {port} is not a TCP port (1-65535)")
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except PermissionError:
            raise UsageError(f"port {port} on {host} needs privileges; choose a port above 1023") from None
        except OSError as error:
            raise UsageError(
                f"port {port} on {host} is in use ({error.strerror}); choose another with --port"
            ) from None

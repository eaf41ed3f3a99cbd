"""`finsec status [--url URL]` (default $FINSEC_URL): what a running server is (its version and shape, no
secrets), the Ray actors it runs on, the sessions and fences its shards hold, and where the marks are kept. Exit
status 0, or 2 when the server cannot be asked."""

from __future__ import annotations

import argparse
import json

import httpx

from finsec_client.cli.usage import EXIT_OK, UsageError, check_url, default_url

__all__ = ["add_parser", "render", "run_status"]


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "status",
        help="what a running server is and holds",
        description="Ask a running finsec server (GET /status) for its version, settings, "
        "actors, sessions and fences, and print them.",
    )
    parser.add_argument(
        "--url", default=default_url(), help="the server, e.g. http://127.0.0.1:8000 (default: $FINSEC_URL)"
    )
    parser.add_argument("--json", action="store_true", help="print the server's answer as JSON")
    parser.set_defaults(run=run_status)


def run_status(options: argparse.Namespace) -> int:
    if not options.url:
        raise UsageError("which server? give --url (e.g. http://127.0.0.1:8000), or set FINSEC_URL")
    url = check_url(options.url).rstrip("/")
    try:
        response = httpx.get(url + "/status", timeout=30)
        status = response.json()
    except (httpx.HTTPError, ValueError) as error:
        raise UsageError(f"{url}/status could not be read ({type(error).__name__}: {error})") from None
    if response.status_code != 200 or not isinstance(status, dict):
        raise UsageError(f"{url}/status answered {response.status_code}: {response.text[:200]}")
    print(json.dumps(status, indent=1) if options.json else render(status))
    return EXIT_OK


def _marks(shard: dict) -> str:
    if shard.get("reads_marks_per_id"):
        return "reads marks per ID"
    return "settled" if shard.get("settled") else "settling"


def render(status: dict) -> str:
    lines = [f"app        {status.get('app')}", f"version    {status.get('version')}"]
    for name, value in status.get("settings", {}).items():
        lines.append(f"  {name:<22}{value}")
    held = status.get("held", {})
    lines.append("held       " + ", ".join(f"{k} {v}" for k, v in held.items()))
    store = status.get("mark_store", {})
    lines.append("marks      " + ("ok" if store.get("ok", True) else f"NEW SESSIONS REFUSED: {store.get('problem')}"))
    for shard in status.get("shards", []):
        lines.append(
            f"  shard {shard['shard']:<4} sessions {shard.get('sessions')}, fences {shard.get('fences')}, "
            f"{_marks(shard)}, life {shard.get('incarnation')}"
        )
    actors = status.get("actors", [])
    lines.append(f"actors     {len(actors) or 'none (in one process)'}")
    lines += [f"  {a.get('name') or a.get('error')}" for a in actors]
    return "\n".join(lines)

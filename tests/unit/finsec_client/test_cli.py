"""The `finsec` command's surface: --help everywhere, and usage errors said in one line each with exit status 2 (no
traceback), before any cluster starts."""

from __future__ import annotations

import errno
import http.server
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from deployments.cli import main
from finsec_client.cli.usage import UsageError, check_port_free
from harness.llm_stub import closed_port_url

ROOT = Path(__file__).resolve().parents[3]
SUBCOMMANDS = (
    ["serve"],
    ["check"],
    ["rollouts"],
    ["corpus"],
    ["corpus", "write"],
    ["corpus", "serve"],
    ["corpus", "questions"],
    ["tasks"],
    ["tasks", "nemo-gym"],
)


def test_the_installed_command_prints_its_help():
    command = Path(sys.executable).parent / "finsec"
    result = subprocess.run([str(command), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for name in ("serve", "rollouts", "corpus"):
        assert name in result.stdout


def test_the_finsec_command_offers_every_client_command():
    """`finsec` is the server's command (deployments/cli) composed with the client's: none of these is left out."""
    from deployments.cli import COMMANDS as SERVER_COMMANDS
    from finsec_client.cli import COMMANDS as CLIENT_COMMANDS
    from finsec_client.cli import parser

    def names(commands) -> set[str]:
        return set(parser(commands)._subparsers._group_actions[0].choices)

    assert names(CLIENT_COMMANDS) <= names(SERVER_COMMANDS)


@pytest.mark.parametrize("argv", SUBCOMMANDS, ids=" ".join)
def test_every_subcommand_has_help(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: finsec {' '.join(argv)}")


def usage_error(argv: list[str], capsys) -> str:
    import ray

    connected = ray.is_initialized()  # the integration suite's cluster, when run after it
    assert main(argv) == 2
    assert ray.is_initialized() == connected  # said before any cluster started
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert lines and all(line.startswith("finsec: error: ") for line in lines), captured.err  # one line a mistake
    assert "Traceback" not in captured.err
    return "\n".join(lines)


@pytest.fixture
def busy_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_a_bad_url_is_a_usage_error(capsys):
    assert "not an http(s) URL" in usage_error(["rollouts", "--url", "localhost:8000"], capsys)
    assert "bad port" in usage_error(["rollouts", "--url", "http://127.0.0.1:99999"], capsys)
    assert "--model-url" in usage_error(
        ["rollouts", "--policy", "llm", "--model", "m", "--model-url", "ftp://x"], capsys
    )


def test_a_server_that_is_not_up_is_a_usage_error(capsys):
    url = closed_port_url().removesuffix("/v1")
    assert f"no server answers at {url}" in usage_error(["rollouts", "--url", url, "-n", "1"], capsys)


def test_a_missing_or_invalid_config_is_a_usage_error(tmp_path, capsys):
    assert "does not exist" in usage_error(["serve", str(tmp_path / "nope.yaml")], capsys)
    bad = tmp_path / "bad.yaml"
    bad.write_text("applications: [")
    assert "is not YAML" in usage_error(["serve", str(bad)], capsys)
    bad.write_text(
        "applications:\n  - name: finsec\n    import_path: deployments.builder:build_app\n"
        "    deployments:\n      - name: FinsecIngress\n        num_replicas: -1\n"
    )
    assert "applications.0.deployments.0.num_replicas: " in usage_error(["serve", str(bad)], capsys)
    bad.write_text(
        "applications:\n  - name: finsec\n    route_prefix: nope\n    import_path: deployments.builder:build_app\n"
    )
    assert "must start with '/'" in usage_error(["serve", str(bad)], capsys)
    bad.write_text(
        "applications:\n  - name: finsec\n    import_path: deployments.builder:build_app\n    args: {num_shards: 0}\n"
    )
    assert "args.num_shards: Input should be greater than or equal to 1" in usage_error(["serve", str(bad)], capsys)
    bad.write_text(
        "applications:\n  - name: finsec\n    import_path: deployments.builder:build_app\n"
        "    args: {no_such_setting: 1}\n"
    )
    assert "no_such_setting" in usage_error(["serve", str(bad)], capsys)
    assert "does not exist" in usage_error(["rollouts", "--config", str(tmp_path / "nope.yaml")], capsys)


def test_a_port_in_use_is_a_usage_error_before_ray_starts(busy_port, capsys, tmp_path):
    message = usage_error(["serve", str(ROOT / "configs" / "serve.yaml"), "--port", str(busy_port)], capsys)
    assert f"port {busy_port} on 127.0.0.1 is in use" in message
    corpus = tmp_path / "c"
    (corpus / "files").mkdir(parents=True)
    (corpus / "files" / "company_tickers.json").write_text("{}")
    assert "in use" in usage_error(["corpus", "serve", str(corpus), "--port", str(busy_port)], capsys)


class _ClosingHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one reply per connection, then the server closes it

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def plain_bind_fails(port: int) -> bool:
    """A bind without SO_REUSEADDR fails: what the port check did before, and what TIME_WAIT entries refuse."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            return error.errno == errno.EADDRINUSE
    return False


def test_a_port_free_again_after_its_server_stopped_passes_at_once():
    """A restart right after a crash: the server served traffic and closed its side of each connection first,
    so its port has TIME_WAIT entries for a minute, yet nothing listens and a new server could bind it.
    Mutation: probing with a bind without SO_REUSEADDR says "in use" here."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _ClosingHandler)  # SO_REUSEADDR, as uvicorn
    port = server.server_address[1]
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
            client.sendall(b"GET / HTTP/1.0\r\n\r\n")
            reply = b""
            while chunk := client.recv(4096):  # to EOF: the server closed first
                reply += chunk
        assert reply.startswith(b"HTTP/1.0 200") and reply.endswith(b"ok")
    server.shutdown()
    server.server_close()
    serving.join(timeout=5)
    deadline = time.monotonic() + 5
    while not plain_bind_fails(port) and time.monotonic() < deadline:  # the last ACK may still be in flight
        time.sleep(0.05)
    assert plain_bind_fails(port), "no TIME_WAIT entry on the server's port: the scenario did not happen"
    check_port_free("127.0.0.1", port)  # no UsageError


@pytest.mark.parametrize("address", ["127.0.0.1", "0.0.0.0"])
@pytest.mark.parametrize("reuse", [False, True], ids=["plain", "SO_REUSEADDR"])
def test_a_port_something_listens_on_is_refused_naming_the_port(address, reuse):
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, int(reuse))
        listener.bind((address, 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(UsageError, match=f"port {port} on 127.0.0.1 is in use"):
            check_port_free("127.0.0.1", port)


def test_other_usage_errors(tmp_path, capsys, monkeypatch):
    assert "--model-url and --model" in usage_error(["rollouts", "--policy", "llm"], capsys)
    assert "does not exist" in usage_error(["rollouts", "--tasks", str(tmp_path / "t.jsonl")], capsys)
    assert "at least 1" in usage_error(["rollouts", "-n", "0"], capsys)
    assert "not in the sec.gov layout" in usage_error(["corpus", "serve", str(tmp_path), "--port", "0"], capsys)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    message = usage_error(["rollouts", "--plot", str(tmp_path)], capsys)
    assert "needs matplotlib" in message and 'pip install -e ".[bench]"' in message


def test_each_bad_number_is_named_on_its_own_line(capsys):
    said = usage_error(["rollouts", "-n", "0", "-c", "0", "--workers", "-1", "-T", "3"], capsys).splitlines()
    assert said == [
        "finsec: error: --episodes must be at least 1, not 0",
        "finsec: error: --concurrency must be at least 1, not 0",
        "finsec: error: --workers must be at least 0, not -1",
        "finsec: error: --temperature must be between 0 and 2, not 3",
    ]
    said = usage_error(["rollouts", "--request-timeout", "nan", "--retry-deadline", "0"], capsys).splitlines()
    assert said == [
        "finsec: error: --request-timeout must be positive, not nan",
        "finsec: error: --retry-deadline must be positive, not 0",
    ]


def test_a_misspelt_flag_gets_a_suggestion(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["rollouts", "--concurency", "3"])
    assert exit_.value.code == 2
    assert "unrecognized arguments: --concurency 3 (did you mean --concurrency?)" in capsys.readouterr().err


def test_finsec_url_stands_for_url(capsys, monkeypatch):
    url = closed_port_url().removesuffix("/v1")
    monkeypatch.setenv("FINSEC_URL", url)
    assert f"{url}/status could not be read" in usage_error(["status"], capsys)
    assert f"no server answers at {url}" in usage_error(["rollouts", "-n", "1"], capsys)
    monkeypatch.delenv("FINSEC_URL")
    assert "give --url" in usage_error(["status"], capsys)


class _RefusingModel(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        self.send_response(401)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_model_endpoint_that_cannot_be_used_is_one_line_before_any_episode(capsys):
    llm = ["rollouts", "--url", "http://127.0.0.1:9", "--policy", "llm", "--model", "m", "--model-url"]
    assert "nothing answers at" in usage_error([*llm, closed_port_url()], capsys)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RefusingModel)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        said = usage_error([*llm, f"http://127.0.0.1:{server.server_port}/v1"], capsys)
    finally:
        server.shutdown()
    assert "refuses the key (HTTP 401)" in said and "$OPENAI_API_KEY" in said


def test_corpus_questions_is_a_task_file_and_corpus_write_writes_the_layout(tmp_path, capsys):
    from finsec_client.tasks import embedded_tasks, load_tasks

    assert main(["corpus", "questions"]) == 0
    tasks = tmp_path / "q.jsonl"
    tasks.write_text(capsys.readouterr().out)
    assert [t.question for t in load_tasks(tasks)] == [t.question for t in embedded_tasks()]
    assert main(["corpus", "write", str(tmp_path / "corpus")]) == 0
    assert (tmp_path / "corpus" / "files" / "company_tickers.json").is_file()
    assert any((tmp_path / "corpus" / "Archives" / "edgar" / "data").iterdir())


def test_the_application_s_logging_config_reaches_its_replicas():
    """configs/serve.yaml turns the per-request access log off for the app; `finsec serve` must deploy it so."""
    from deployments.cli.serve_config import load_serve_config

    for name in ("serve.yaml", "serve-cluster.yaml"):
        options = load_serve_config(ROOT / "configs" / name).deployment_options
        assert options["logging_config"]["enable_access_log"] is False, name


def test_a_run_never_overwrites_an_earlier_one(tmp_path, capsys):
    earlier = tmp_path / "run.jsonl"
    earlier.write_text('{"run": {}}\n')
    url = closed_port_url().removesuffix("/v1")
    said = usage_error(["rollouts", "--url", url, "-n", "1", "--out", str(earlier)], capsys)
    assert "--resume" in said and "--force" in said, said
    assert earlier.read_text() == '{"run": {}}\n'
    forced = usage_error(["rollouts", "--url", url, "-n", "1", "--out", str(earlier), "--force"], capsys)
    assert "no server answers" in forced  # past the check: --force lets it replace the file

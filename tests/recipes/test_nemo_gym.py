"""The NeMo Gym recipe (docs/recipes/nemo-gym.md) as its page runs it: `finsec recipe nemo-gym` writes the folder,
`finsec tasks nemo-gym` the rows, and nemo-gym 0.7.0's own `gym env start` and `gym eval run --no-serve` play
them with finance_agent (the legacy path) and with the single_agent_turn Environment Server, against a real
finsec-serve on loopback, both ways it is served (the one process, and the Serve app as configs/serve.yaml deploys
it), and the agent model (tests/recipes/agent_model.py); then again with 512 rollouts in flight at once, which
Gym's client sends once each (it retries only dropped connections), so every one must be admitted. Gym joins a
private loopback Ray cluster the test starts, and everything it started is stopped by PID or process group, never
by `ray stop`. Skips without `.venv-nemo-gym` (it needs a Python 3.13)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from deployments.cli import main
from deployments.cli.serve_config import load_serve_config
from deployments.local import QUIET_LOGS, deploy_application, undeploy
from deployments.settings import Settings
from finsec.corpus.generate import embedded_corpus_dir
from finsec.net.ports import free_port
from finsec_client.recipes import GYM_SERVERS
from finsec_client.tasks import embedded_tasks
from harness.bodies import ROOT
from harness.ray_head import RayHead
from tests.recipes.agent_model import AgentModel
from tests.recipes.conftest import Finsec, recipe_python

_ALL = embedded_tasks()
# Four 10-K questions, a 10-Q and an 8-K; the second and the fifth are answered wrongly.
TASKS = [t for t in _ALL if t.hint("form") == "10-K"][:4] + [
    next(t for t in _ALL if t.hint("form") == form) for form in ("10-Q", "8-K")
]
WRONG = {TASKS[1].question, TASKS[4].question}
EXPECTED = [0.0 if t.question in WRONG else 1.0 for t in TASKS]
TASKSET = "recipe-tasks"  # the task file's name, so its episode rows' taskset
SERVER_TYPES = ("resources_servers", "responses_api_models", "responses_api_agents", "environment_servers")

# Nothing leaves loopback: no Ray usage stats, Hugging Face hub or W&B calls.
OFFLINE = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "WANDB_MODE": "disabled",
    "DO_NOT_TRACK": "1",
    "PYTHONUNBUFFERED": "1",
}
# A process started in the background may have SIGINT ignored, which exec keeps: then `gym env start` could not
# be stopped as Ctrl-C stops it (its servers would outlive it). So it starts through this.
WITH_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
)


class GymRayHead(RayHead):
    """The test's private Ray cluster, started with nemo-gym's Ray (Gym's processes join it: same Ray and Python)."""

    def __init__(self, bin_dir: Path):
        super().__init__(env=OFFLINE)
        self.bin = bin_dir

    def start(self) -> None:
        subprocess.run(
            [
                str(self.bin / "ray"),
                "start",
                "--head",
                f"--port={self.gcs_port}",
                "--node-ip-address=127.0.0.1",
                f"--temp-dir={self.folder}",
                f"--ray-client-server-port={self.client_port}",
                "--num-cpus=2",
                "--include-dashboard=false",
                "--disable-usage-stats",
            ],
            env=self.env,
            check=True,
            capture_output=True,
            timeout=120,
        )


IN_FLIGHT = 512
REFUSALS = ("The server is busy", "Request dropped due to backpressure")  # finsec's admission; Serve's own
REPEATS = -(-IN_FLIGHT // len(TASKS))  # every task this many times: at least IN_FLIGHT rollouts


@pytest.fixture(scope="module", params=["one-process", "serve"])
def finsec(request, finsec_in_process: Finsec) -> Iterator[Finsec]:
    """finsec-serve both ways: the recipes' one process, or the Serve app as configs/serve.yaml deploys it (its
    replicas and admission) on the test session's Ray cluster, at route prefix "/" as Gym needs it."""
    if request.param == "one-process":
        yield finsec_in_process
        return
    recipe_python("nemo-gym")  # skip before deploying anything
    target = load_serve_config(ROOT / "configs/serve.yaml")
    settings = Settings(
        **{
            **target.settings.model_dump(exclude_unset=True),
            "app_name": "recipe-gym",
            "corpus_dir": embedded_corpus_dir(),
        }
    )
    url = deploy_application(
        settings,
        request.getfixturevalue("serve_url"),
        name="recipe-gym",
        options={**target.deployment_options, "ray_actor_options": {"num_cpus": 0}, "logging_config": QUIET_LOGS},
    )
    try:
        yield Finsec(url, None)
    finally:
        undeploy(settings, purge=True)


@dataclass
class Gym:
    folder: Path
    bin: Path
    env: dict[str, str]
    said: str = ""  # what the last run printed

    def eval_run(self, *args: str) -> list[dict]:
        """`gym eval run --no-serve --config gym.yaml ARGS`, run as the recipe page gives it; its rollouts."""
        done = subprocess.run(
            [str(self.bin / "gym"), "eval", "run", "--no-serve", "--config", "gym.yaml", *args],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.said = done.stdout + done.stderr
        assert done.returncode == 0, self.said[-4000:]
        out = self.folder / args[args.index("-o") + 1]
        failures = out.with_name(out.stem + "_failures.jsonl")
        assert not failures.exists() or not failures.read_text().strip(), failures.read_text()[:2000]
        return [json.loads(line) for line in out.read_text().splitlines()]


@pytest.fixture(scope="module")
def gym(finsec, model, tmp_path_factory) -> Iterator[Gym]:
    python = recipe_python("nemo-gym")
    bin_dir = python.parent
    model.respond_with(AgentModel(TASKS, wrong=WRONG))
    folder = tmp_path_factory.mktemp("nemo-gym") / "recipe"
    ray = GymRayHead(bin_dir)
    assert (
        main(
            [
                "recipe",
                "nemo-gym",
                str(folder),
                "--finsec-url",
                finsec.url,
                "--model-url",
                model.base_url,
                "--model",
                "agent-model",
                "--gym-venv",
                str(bin_dir.parent),
                "--head-port",
                str(free_port()),
                "--ray-address",
                ray.address,
                "--taskset",
                TASKSET,
            ]
        )
        == 0
    )
    task_file = folder / f"{TASKSET}.jsonl"
    task_file.write_text("".join(json.dumps(t.data) + "\n" for t in TASKS))
    assert main(["tasks", "nemo-gym", "--tasks", str(task_file), "--out", str(folder / "tasks.jsonl")]) == 0
    assert (
        main(["tasks", "nemo-gym", "--tasks", str(task_file), "--episode", "--out", str(folder / "episodes.jsonl")])
        == 0
    )

    log = folder / "gym-env-start.log"
    server = None
    try:
        ray.start()
        with log.open("wb") as out:
            # Its own process group: the servers it starts (a shell each) stay in it, so none can outlive the test.
            server = subprocess.Popen(
                [str(python), "-c", WITH_SIGINT, str(bin_dir / "gym"), "env", "start", "--config", "gym.yaml"],
                cwd=folder,
                env=ray.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        _wait_until_ready(server, log)
        yield Gym(folder, bin_dir, ray.env)
    finally:
        if server is not None:
            _stop(server)
        ray.kill_all()
        shutil.rmtree(ray.folder, ignore_errors=True)


def _wait_until_ready(server: subprocess.Popen, log: Path, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while "servers ready!" not in log.read_text(errors="replace"):  # gym env start's own word for it
        if server.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"gym env start did not come up:\n{log.read_text(errors='replace')[-4000:]}")
        time.sleep(0.3)


def _stop(server: subprocess.Popen) -> None:
    """Ctrl-C, as the recipe page stops it (Gym then stops its servers); then whatever is left of its group."""
    try:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(server.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    server.wait(timeout=30)


def rewards(rollouts: list[dict]) -> list[float]:
    by_task = {row["_ng_task_index"]: row["reward"] for row in rollouts}
    return [by_task.get(i) for i in range(len(TASKS))]


def test_finance_agent_plays_the_flat_rows_on_the_legacy_path(gym, finsec):
    before = finsec.counters()["counters"]
    rollouts = gym.eval_run("--agent", "finance_agent", "-i", "tasks.jsonl", "-o", "runs/finance_agent.jsonl")
    assert rewards(rollouts) == EXPECTED
    assert all(row["response"]["metadata"]["stop_reason"] == "done_tool" for row in rollouts)  # submit_final_result
    after = finsec.counters()["counters"]
    # finance_agent seeds each episode itself (an agent-run seed), then verifies it; nothing is left held
    assert after.get("seeds.agent_run", 0) - before.get("seeds.agent_run", 0) == len(TASKS)
    assert after.get("seeds.episode.created", 0) == before.get("seeds.episode.created", 0)
    assert finsec.held() == 0


def test_the_environment_server_plays_the_episode_rows(gym, finsec):
    before = finsec.counters()["counters"]
    rollouts = gym.eval_run("-i", "episodes.jsonl", "-o", "runs/episodes.jsonl")
    assert rewards(rollouts) == EXPECTED
    assert {row["_ng_environment_server"] for row in rollouts} == {"finsec_episode_environment_server"}
    after = finsec.counters()["counters"]
    # single_agent_turn seeds each episode under its resources_session_id, verifies it and closes it
    for counter in ("seeds.episode.created", "closes"):
        assert after.get(counter, 0) - before.get(counter, 0) == len(TASKS), counter
    assert after.get("seeds.agent_run", 0) == before.get("seeds.agent_run", 0)
    assert finsec.held() == 0


class HeldPeak:
    """The most sessions finsec held at once while a run went on (GET /status, polled): rollouts in flight."""

    def __init__(self, finsec: Finsec):
        self.finsec, self.most, self._stop = finsec, 0, threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.wait(0.2):
            try:
                self.most = max(self.most, self.finsec.held())
            except Exception:  # a busy server's slow answer: the next poll
                pass

    def __enter__(self) -> HeldPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


@pytest.mark.parametrize("agent, rows", [("finance_agent", "tasks.jsonl"), (None, "episodes.jsonl")])
def test_512_rollouts_in_flight_all_complete_clean(gym, finsec, agent, rows):
    """Gym's own chain with IN_FLIGHT rollouts at once against finsec-serve as shipped: every rollout completes with
    its reward (none in the failures file, which eval_run checks), and no tool result carries a refusal."""
    chosen = ["--agent", agent] if agent else []
    with HeldPeak(finsec) as peak:
        rollouts = gym.eval_run(
            *chosen,
            "-i",
            rows,
            "-o",
            f"runs/scale-{agent or 'episodes'}.jsonl",
            "--num-repeats",
            str(REPEATS),
            "--concurrency",
            str(IN_FLIGHT),
        )
    assert len(rollouts) == REPEATS * len(TASKS)
    assert f"Querying with {IN_FLIGHT} concurrent requests" in gym.said, gym.said[-2000:]
    # Sessions held at once, polled: the first rollouts end while the burst's last seeds still wait for a place,
    # so the peak is below the rollouts in flight, but far above what a server that ran them in turn would hold.
    assert peak.most >= IN_FLIGHT // 2, peak.most
    expected = {i: reward for i, reward in enumerate(EXPECTED)}
    assert [row["reward"] for row in rollouts] == [expected[row["_ng_task_index"]] for row in rollouts]
    refused = [row for row in rollouts if any(word in json.dumps(row) for word in REFUSALS)]
    assert not refused, json.dumps(refused[0])[:2000]
    assert finsec.held() == 0


def test_the_folder_holds_gyms_config_for_the_running_finsec(tmp_path, capsys):
    venv = tmp_path / "gym-venv"
    for name in ("python", "activate", "gym"):
        (venv / "bin").mkdir(parents=True, exist_ok=True)
        (venv / "bin" / name).touch()
    folder = tmp_path / "recipe"
    assert (
        main(
            [
                "recipe",
                "nemo-gym",
                str(folder),
                "--finsec-url",
                "http://finsec.internal:8000/",
                "--model-url",
                "http://127.0.0.1:8001/v1",
                "--model",
                "Qwen/Qwen3-8B",
                "--gym-venv",
                str(venv),
                "--taskset",
                "a",
                "--taskset",
                "b",
            ]
        )
        == 0
    )
    assert "gym env start --config gym.yaml" in capsys.readouterr().out
    config = yaml.safe_load((folder / "gym.yaml").read_text())
    finsec = config["finsec_resources_server"]["resources_servers"]["finsec_external"]
    assert (finsec["host"], finsec["port"]) == ("finsec.internal", 8000)
    assert (config["policy_base_url"], config["policy_model_name"]) == ("http://127.0.0.1:8001/v1", "Qwen/Qwen3-8B")
    assert config["environment_server_routes"] == {
        "a": "finsec_episode_environment_server",
        "b": "finsec_episode_environment_server",
    }
    assert "ray_head_node_address" not in config  # Gym starts its own Ray unless told to join one
    # every server the config runs has its link to the one virtualenv, so Gym builds none (no uv, no PyPI)
    servers = {
        f"{kind}/{impl}"
        for entry in config.values()
        if isinstance(entry, dict)
        for kind in SERVER_TYPES
        if kind in entry
        for impl in entry[kind]
    }
    assert servers == set(GYM_SERVERS)
    assert config["skip_venv_if_present"] is True and config["uv_venv_dir"] == str(folder / "venvs")
    assert all((folder / "venvs" / s / ".venv").resolve() == venv.resolve() for s in GYM_SERVERS)
    assert (folder / "resources_servers/finsec_external/app.py").is_file()
    assert (
        main(
            [
                "recipe",
                "nemo-gym",
                str(folder),
                "--finsec-url",
                "http://127.0.0.1:8000",
                "--model-url",
                "http://127.0.0.1:8001/v1",
                "--model",
                "m",
            ]
        )
        == 2
    )  # not over an existing one
    assert "--force" in capsys.readouterr().err
    mine = tmp_path / "mine"
    (mine / "resources_servers/finsec_external").mkdir(parents=True)
    (mine / "resources_servers/finsec_external/app.py").write_text("# the user's own\n")  # no gym.yaml beside it
    assert (
        main(
            [
                "recipe",
                "nemo-gym",
                str(mine),
                "--finsec-url",
                "http://127.0.0.1:8000",
                "--model-url",
                "http://127.0.0.1:8001/v1",
                "--model",
                "m",
            ]
        )
        == 2
    )
    assert "not empty" in capsys.readouterr().err
    assert (mine / "resources_servers/finsec_external/app.py").read_text() == "# the user's own\n"


@pytest.mark.parametrize(
    "url, says",
    [("http://127.0.0.1:8000/finsec", "route prefix"), ("https://h:8000", "http"), ("http://[::1]:8000", "IPv6")],
)
def test_a_finsec_url_gym_cannot_call_is_refused(url, says, tmp_path, capsys):
    assert (
        main(
            [
                "recipe",
                "nemo-gym",
                str(tmp_path / "r"),
                "--finsec-url",
                url,
                "--model-url",
                "http://127.0.0.1:8001/v1",
                "--model",
                "m",
            ]
        )
        == 2
    )
    assert says in capsys.readouterr().err
    assert not (tmp_path / "r").exists()

"""The verifiers recipe (docs/recipes/verifiers.md): verifiers' own `vf-eval`, with its NeMo Gym taskset pointed at a
running finsec-serve, plays the rows `finsec tasks nemo-gym` writes, with the agent model standing in for the
model. verifiers seeds each rollout with its row (an agent-run seed), calls the tools through its MCP bridge, and
scores with /verify: the rewards must be /verify's, and every session released by it. Runs from
`.venv-verifiers` (verifiers pins mcp 2.0, the mcp extra 2.3); skips without it."""

from __future__ import annotations

import json
import os
import subprocess

from deployments.cli import main
from finsec_client.tasks import embedded_tasks
from harness.real_filings import EDGAR_REAL, needs_real_filings
from tests.recipes.agent_model import AgentModel
from tests.recipes.conftest import recipe_python

EVAL_TOML = """\
model = "agent-model"
push = false
max_concurrent = 4

[client]
base_url = "{model_url}"
api_key_var = "AGENT_MODEL_KEY"

[env.taskset]
id = "nemo_gym"
dataset = "{rows}"

[env.taskset.task]
resources_url = "{finsec_url}"
request_timeout = 180

[env.agent]
max_turns = 12

[env.agent.harness]
id = "null"

[env.agent.runtime]
type = "subprocess"
"""


def test_vf_eval_scores_rollouts_with_verify(finsec, model, tmp_path):
    python = recipe_python("verifiers")
    tasks = [t for t in embedded_tasks() if t.hint("ticker") and t.hint("form")][:4]
    wrong = {tasks[1].question, tasks[3].question}
    model.respond_with(AgentModel(tasks, wrong))
    source = tmp_path / "tasks.jsonl"
    source.write_text("".join(json.dumps(t.data) + "\n" for t in tasks))
    rows = tmp_path / "rows.jsonl"
    assert main(["tasks", "nemo-gym", "--tasks", str(source), "--out", str(rows)]) == 0
    config = tmp_path / "eval.toml"
    config.write_text(EVAL_TOML.format(model_url=model.base_url, rows=rows, finsec_url=finsec.url))
    before = finsec.counters()["counters"]

    bin_dir = python.parent  # vf-eval, and the uv that runs verifiers' harness program
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "AGENT_MODEL_KEY": "unused",
        "UV_PYTHON_DOWNLOADS": "never",
    }  # uv uses this machine's Python, never downloads one
    run = subprocess.run(
        [str(bin_dir / "vf-eval"), "@", str(config), "--output-dir", str(tmp_path / "out")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    episodes = [
        json.loads(line)
        for path in (tmp_path / "out").rglob("traces.jsonl")
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    assert len(episodes) == len(tasks) and all(e["ok"] for e in episodes), [e["errors"] for e in episodes]
    traces = [trace for episode in episodes for trace in episode["traces"]]
    rewards = {t["task"]["data"]["row"]["question"]: t["rewards"]["nemo_gym"]["score"] for t in traces}
    assert rewards == {t.question: 0.0 if t.question in wrong else 1.0 for t in tasks}
    assert all(t["metrics"].get("mask_sample") == 0.0 for t in traces)

    after = finsec.counters()["counters"]
    assert after.get("seeds.agent_run", 0) - before.get("seeds.agent_run", 0) == len(tasks)
    assert after.get("verifies.scored", 0) - before.get("verifies.scored", 0) == len(tasks)
    assert finsec.held() == 0  # each agent-run session released by its verify (§C.5 step 7)


LOAD_ROWS = """
import sys
from pathlib import Path
from verifiers.v1.tasksets.nemo_gym.taskset import NeMoGymConfig, NeMoGymTaskset
tasks = list(NeMoGymTaskset(NeMoGymConfig(dataset=Path(sys.argv[1]))).load())
print(len(tasks), tasks[0].data.row["question"] == tasks[0].data.prompt[-1].content)
"""


@needs_real_filings
def test_verifiers_loads_the_rows_tasks_build_writes(tmp_path):
    python = recipe_python("verifiers")
    out = tmp_path / "tasks"
    assert (
        main(
            [
                "tasks",
                "build",
                "--corpus",
                str(EDGAR_REAL),
                "--out",
                str(out),
                "--tickers",
                "AAPL",
                "--forms",
                "10-Q",
                "--split",
                "1,0,0",
            ]
        )
        == 0
    )
    rows = out / "nemo-gym" / "train.jsonl"
    loaded = subprocess.run([str(python), "-c", LOAD_ROWS, str(rows)], capture_output=True, text=True, timeout=300)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert loaded.stdout.split() == [str(len(rows.read_text().splitlines())), "True"]

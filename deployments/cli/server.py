"""Starting and stopping the Serve app for `finsec serve` and for `finsec rollouts` without --url.

On a local cluster it starts (deployments.local, HAProxy ingress by default) the stop removes the app's detached
actors and then the whole cluster, HAProxy included. Joined to a running cluster (`--address`) it deploys with
serve.start/serve.run and, on stop, deletes only its application and actors: the cluster and Serve stay up."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from deployments.cli.serve_config import ServeTarget, describe_corpus, load_serve_config, packaged_config
from finsec_client.cli.usage import UsageError, check_port_free, one_line
from finsec_client.workers import join_cluster

__all__ = ["LOCAL_SERVER", "running_app"]

if TYPE_CHECKING:  # the server is loaded when a command starts it, never by the command line itself
    from deployments.local import Ingress


@contextmanager
def running_app(
    target: ServeTarget, *, address: str | None = None, ingress: Ingress = "haproxy", say=print, purge: bool = False
) -> Iterator[str]:
    """Deploy `target`; yields the app's URL; undeploys (and stops a cluster it started) on the way out, keeping
    the app's durable records (fences, seeds, cookie secret) unless `purge`."""

    from deployments.local import start_ray_and_serve

    started_cluster = address is None
    try:
        if address is None:  # started_cluster
            check_port_free(target.host if target.host in ("127.0.0.1", "localhost") else "127.0.0.1", target.port)
            # address="local": a new cluster, never one another `ray start` left on this machine (ray.init
            # without an address joins the newest such cluster when it finds one)
            base_url = start_ray_and_serve(target.port, ingress=ingress, address="local")
        else:
            join_cluster(address)
            from ray import serve

            serve.start(http_options={"host": target.host, "port": target.port})
            # A Serve already running keeps its own HTTP options (serve.start only warns): ask it which. Serve has no
            # public call that reads them; this is the one place that reaches its client.
            from ray.serve.context import _get_global_client

            client = _get_global_client()
            assert client is not None  # it raises, never returns None, when no controller runs
            http = client.http_config
            host = "127.0.0.1" if http.host in ("0.0.0.0", "::", "", None) else http.host
            base_url = f"http://{host}:{http.port}"
        url = _deploy(target, base_url)
    except BaseException:
        _stop(target, started_cluster, say, purge)
        raise
    try:
        yield url
    finally:
        _stop(target, started_cluster, say, purge)


def _deploy(target: ServeTarget, base_url: str) -> str:
    from ray.serve.exceptions import RayServeException

    from deployments.local import deploy_application

    try:
        return deploy_application(
            target.settings,
            base_url,
            name=target.app_name,
            route_prefix=target.route_prefix,
            options=target.deployment_options,
        )
    except TimeoutError as error:
        raise UsageError(
            f"{error}: does the config ask for more CPUs than the cluster has (replicas x ray_actor_options.num_cpus)?"
        ) from None
    except (RayServeException, TypeError, ValueError) as error:
        raise UsageError(f"Serve refused the application: {one_line(error)}") from None


def _stop(target: ServeTarget, started_cluster: bool, say, purge: bool = False) -> None:
    import ray

    from deployments.local import stop_ray_and_serve, undeploy_application

    if not ray.is_initialized():
        return
    say(
        f"stopping: removing the application {target.app_name!r} and its actors"
        + (" and the local Ray cluster" if started_cluster else " (the cluster stays up)")
    )
    try:
        purged = undeploy_application(target.settings, target.app_name, purge=purge)
        store = "Redis" if target.settings.mark_store() else "the cluster's GCS key-value store"
        say(
            f"purged {purged} durable records (fences, episode seeds, cookie secret) of {target.app_name!r} "
            f"from {store}"
            if purge
            else f"kept the fences, episode seeds and cookie secret in {store}"
        )
    except Exception as error:  # still stop the cluster; say what was left behind
        print(f"finsec: warning: could not remove the application cleanly: {one_line(error)}", file=sys.stderr)
    if started_cluster:
        stop_ray_and_serve()
    else:
        ray.shutdown()


class _LocalServer:
    """`finsec rollouts` without --url: the app from --config (or the packaged one) on a free port, on a local
    cluster or joined to --address, stopped after the run (finsec_client.cli.rollouts.LocalServer)."""

    def check(self, config: Path) -> None:
        load_serve_config(config)

    def running(self, options: argparse.Namespace) -> AbstractContextManager[str]:
        return self._running(options)

    @contextmanager
    def _running(self, options: argparse.Namespace) -> Iterator[str]:
        from finsec.net.ports import free_port

        # the config's port may be taken (a `finsec serve` running): any free one will do
        target = replace(load_serve_config(options.config or packaged_config()), port=free_port())
        began = time.monotonic()
        where = "on " + options.address if options.address else "a local Ray cluster"
        print(f"starting {where} and the app on {describe_corpus(target.settings)} ...", file=sys.stderr, flush=True)
        with running_app(
            target, address=options.address, ingress=options.ingress, say=lambda m: print(m, file=sys.stderr)
        ) as url:
            print(f"finsec-serve is up at {url} after {time.monotonic() - began:.1f}s", file=sys.stderr, flush=True)
            yield url

    def workers_cluster(self) -> None:
        from deployments.local import start_ray

        start_ray()


LOCAL_SERVER = _LocalServer()

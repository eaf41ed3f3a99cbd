"""The replica's metrics (finsec/metrics.py) exported through Ray's metrics API, when this process is a Ray worker."""

from __future__ import annotations

from typing import Any

from finsec.metrics import DEFINITIONS, REWARDS, SECONDS

__all__ = ["ray_metrics"]

_BOUNDARIES = {"finsec_verify_reward": REWARDS}


def ray_metrics() -> dict[str, Any]:
    """The Ray metrics, when this process is a Ray worker (a replica); none otherwise."""
    try:
        import ray

        if not ray.is_initialized():
            return {}
        from ray.util.metrics import Counter as RayCounter
        from ray.util.metrics import Histogram
    except ImportError:
        return {}
    made: dict[str, Any] = {}
    for name, (kind, description, labels) in DEFINITIONS.items():
        keys = ("app", *labels)
        made[name] = (
            RayCounter(name, description, tag_keys=keys)
            if kind == "counter"
            else Histogram(name, description, boundaries=_BOUNDARIES.get(name, SECONDS), tag_keys=keys)
        )
    return made

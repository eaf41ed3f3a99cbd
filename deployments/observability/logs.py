"""The app's own log lines in the replica's Serve log, in the encoding the serve config chooses
(`logging_config.encoding: JSON` for structured logs; configs/serve-cluster.yaml sets it).

Serve formats only its `ray.serve` logger (TEXT or JSON, into logs/serve/replica_*.log, with the replica's and
the request's IDs); a module logger such as `deployments.edgar.live` would reach the worker's plain stderr
instead. Called once in each replica, after Serve has configured its logger."""

from __future__ import annotations

import logging

APP_LOGGERS = ("deployments", "session_store")


def into_serve_logs() -> None:
    serve = logging.getLogger("ray.serve")
    for name in APP_LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers = list(serve.handlers)
        logger.setLevel(serve.level)
        logger.propagate = False  # once, in Serve's format: not again in the worker's stderr

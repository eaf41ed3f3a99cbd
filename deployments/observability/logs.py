"""The app's own log lines in the replica's Serve log, in the encoding the serve config chooses
(`logging_config.encoding: JSON` for structured logs; configs/serve-cluster.yaml sets it).

Serve formats only its `ray.serve` logger (TEXT or JSON, into logs/serve/replica_*.log, with the replica's and
the request's IDs); a module logger such as `finsec.edgar.live` would reach the worker's plain stderr
instead. Called once in each replica. Records are handed to `ray.serve` as they come, so they follow its
handlers when Serve configures them again (a new `logging_config`)."""

from __future__ import annotations

import logging

__all__ = ["APP_LOGGERS", "into_serve_logs"]

APP_LOGGERS = ("deployments", "finsec", "session_store")


class _ToServe(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        serve = logging.getLogger("ray.serve")
        if record.levelno >= serve.getEffectiveLevel():
            serve.handle(record)  # its filters and its current handlers


def into_serve_logs() -> None:
    for name in APP_LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers = [_ToServe()]
        logger.setLevel(logging.DEBUG)  # Serve's level decides, as it is now (emit)
        logger.propagate = False  # once, in Serve's format: not again in the worker's stderr

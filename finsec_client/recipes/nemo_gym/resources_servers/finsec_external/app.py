"""Stands in for finsec-serve among the servers `gym env start` runs.

NeMo Gym 0.7.0 lets an agent or environment server call only a resources server that is an entry of its config,
and it starts every entry itself. gym.yaml gives this entry the host and port of the finsec-serve that already
runs, so Gym's readiness probe and every tool, seed, verify and close call go there. This process binds nothing:
it waits for Gym to stop it (SIGINT, as on Ctrl-C; SIGTERM too)."""

import signal
import sys

__all__ = ["main"]


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("finsec_external: the resources server is the finsec-serve at this entry's host and port", flush=True)
    try:
        while True:
            signal.pause()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

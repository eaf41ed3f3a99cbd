"""The old demo's request-by-request view, now `finsec rollouts --trace` (kept as a shim).

    python -m deployments.demo [finsec rollouts options]
"""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main(["rollouts", "--trace", *sys.argv[1:]]))

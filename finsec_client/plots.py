"""`--plot DIR`: PNGs of the run's rewards and latencies (matplotlib, from the `bench` extra)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from finsec_client.records import EpisodeRecord

__all__ = ["INSTALL_HINT", "PlottingUnavailable", "require_matplotlib", "write_plots"]

INSTALL_HINT = 'pip install -e ".[bench]"  (or: pip install matplotlib)'


class PlottingUnavailable(RuntimeError):
    pass


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise PlottingUnavailable(f"--plot needs matplotlib, which is not installed: {INSTALL_HINT}") from None


def write_plots(records: list[EpisodeRecord], folder: Path) -> list[Path]:
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []

    ordered = sorted(records, key=lambda r: r.episode)
    fig, ax = plt.subplots(figsize=(8, 4))
    by_driver: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for r in ordered:
        if r.reward is not None and not r.masked and r.failure is None:
            by_driver[r.driver].append((r.episode, r.reward))
    for driver, points in sorted(by_driver.items()):
        xs, ys, total = [], [], 0.0
        for n, (episode, reward) in enumerate(points, 1):
            total += reward
            xs.append(episode)
            ys.append(total / n)
        ax.plot(xs, ys, label=f"{driver} (running mean)")
    ax.set_xlabel("episode")
    ax.set_ylabel("reward")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title("Reward over the run (scored episodes)")
    if by_driver:
        ax.legend()
    written.append(_save(fig, folder / "reward.png"))

    latencies: dict[str, list[float]] = defaultdict(list)
    for r in records:
        for call in r.calls:
            if call["status"] is not None:
                latencies[call["route"]].append(call["ms"])
    fig, ax = plt.subplots(figsize=(9, 4.5))
    routes = sorted(latencies)
    if routes:
        ax.boxplot([latencies[r] for r in routes], showfliers=False)
        ax.set_xticks(range(1, len(routes) + 1), routes, rotation=30, ha="right")
    ax.set_ylabel("latency (ms)")
    ax.set_title("Request latency by route (whiskers 1.5 IQR, outliers hidden)")
    written.append(_save(fig, folder / "latency.png"))
    return written


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

"""What a build made: tasks per filing and kind, how many facts read the same tagged and printed, what was
dropped and why, and the companies of each split."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from finsec.taskgen.build import ACROSS_FILINGS, TIERS, Built, Source

__all__ = ["BuildReport"]


@dataclass
class BuildReport:
    filings: list[dict[str, Any]] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # filings the source gave no text for
    splits: dict[str, list[str]] = field(default_factory=dict)  # split -> tickers
    # Tasks across filings, by kind: two companies' 10-Ks (compare.py), a company's 10-Ks or 10-Qs (periods.py).
    across: Counter[str] = field(default_factory=Counter)

    def add(self, source: Source, built: Built, split: str) -> None:
        self.filings.append(
            {
                "ticker": source.ticker,
                "form": source.form,
                "accession": source.accession,
                "split": split,
                "tasks": len(built.tasks),
                "by_kind": dict(Counter(task["kind"] for task in built.tasks)),
                "facts_checked": built.facts_checked,
                "facts_agreeing": built.facts_agreeing,
                "dropped": {f"{kind}: {reason}": n for (kind, reason), n in sorted(built.dropped.items())},
            }
        )
        tickers = self.splits.setdefault(split, [])
        if source.ticker not in tickers:
            tickers.append(source.ticker)

    def to_json(self) -> dict[str, Any]:
        return {
            "filings": self.filings,
            "unreadable": self.unreadable,
            "splits": self.splits,
            "tasks": sum(row["tasks"] for row in self.filings) + sum(self.across.values()),
            "comparisons": self.across["comparison"],
            "growth": self.across["growth"],
            "quarter_changes": self.across["quarter_change"],
            "facts_checked": sum(row["facts_checked"] for row in self.filings),
            "facts_agreeing": sum(row["facts_agreeing"] for row in self.filings),
            "dropped": sum(sum(row["dropped"].values()) for row in self.filings),
        }

    def render(self) -> str:
        summary = self.to_json()
        kinds = [kind for kind in TIERS if kind not in ACROSS_FILINGS]  # a filing's own; the others are counted below
        lines = [
            "| filing | split | " + " | ".join(kinds) + " | tasks | facts agreeing | dropped |",
            "|---|---|" + "---|" * (len(kinds) + 3),
        ]
        for row in self.filings:
            counts = " | ".join(str(row["by_kind"].get(kind, 0)) for kind in kinds)
            dropped = "; ".join(f"{reason} ({n})" for reason, n in row["dropped"].items()) or "-"
            lines.append(
                f"| {row['ticker']} {row['form']} {row['accession']} | {row['split']} | {counts} | "
                f"{row['tasks']} | {row['facts_agreeing']}/{row['facts_checked']} | {dropped} |"
            )
        checked = summary["facts_checked"]
        lines += [
            "",
            f"{summary['tasks']} tasks from {len(self.filings)} filings ({summary['comparisons']} of them comparisons "
            f"across two companies, {summary['growth']} growth rates across a company's 10-Ks, "
            f"{summary['quarter_changes']} quarters against the same quarter a year before across its 10-Qs); every "
            f"kept task's facts read the same tagged and printed ({summary['facts_agreeing']} of {checked} facts checked agreed; "
            f"{summary['dropped']} tasks dropped).",
            "Splits by company: "
            + "; ".join(f"{name} {', '.join(sorted(tickers))}" for name, tickers in sorted(self.splits.items()))
            + ".",
        ]
        if self.unreadable:
            lines.append("No text for: " + ", ".join(self.unreadable) + ".")
        return "\n".join(lines) + "\n"

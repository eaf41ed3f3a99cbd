"""Prompt texts: an inline string from the configuration, else a key of a YAML file (contract §D.4, §E.2)."""

from __future__ import annotations

from pathlib import Path

import yaml

__all__ = ["load_prompt", "STOCK_DIR"]

STOCK_DIR = Path(__file__).parent / "prompt_templates"


def load_prompt(inline: str | None, fpath: str | Path, key: str) -> str:
    """The inline text when it is non-empty, else `key` of the YAML mapping at `fpath`; whitespace stripped."""
    if inline:
        return inline.strip()
    data = yaml.safe_load(Path(fpath).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get(key), str):
        raise ValueError(f"{fpath}: expected a YAML mapping with a string under {key!r}")
    return data[key].strip()

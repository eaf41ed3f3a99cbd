"""The tools as an OpenAI-compatible model sees them (finsec/tools/catalog.py, from the routes' request models)."""

from __future__ import annotations

from typing import Any

from finsec.tools.catalog import DEFAULT_TOOLS, TOOLS, parameters

__all__ = ["tool_schemas"]


def tool_schemas(names: tuple[str, ...] = DEFAULT_TOOLS) -> list[dict[str, Any]]:
    """Chat-completions `tools`: [{"type": "function", "function": {name, description, parameters}}]."""
    return [
        {"type": "function", "function": {"name": name, "description": TOOLS[name][1], "parameters": parameters(name)}}
        for name in names
    ]

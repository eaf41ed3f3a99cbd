"""Policies choose an episode's tool calls: `scripted` (reads the retrieved passages like a careful analyst) and
`llm` (an OpenAI-compatible model with tool calling). A policy plays one task through a Toolbox."""

from __future__ import annotations

from typing import Protocol

from finsec_client.tasks import Task
from finsec_client.toolbox import Toolbox

__all__ = ["Policy"]


class Policy(Protocol):
    name: str

    async def play(self, task: Task, tools: Toolbox) -> None:
        """Call tools until done; the last submit_final_result call is the answer."""

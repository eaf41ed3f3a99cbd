"""The one base class of tool-level failures: errors whose message is the tool's result, which the agent reads
(contract §A.0, "soft tool errors": HTTP 200 with the message in `results`). A ValueError, as most of them are
argument problems."""


class ToolError(ValueError):
    """A failure the agent can act on; `str(error)` is what the tool answers."""

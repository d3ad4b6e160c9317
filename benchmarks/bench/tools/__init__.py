"""The compared reducers, one adapter module each, and the registry the runner drives.

Adding a tool: a module beside these that defines its `TOOL` (see `base.Tool`),
and its name in `TOOLS` (the order of `--tools`' default).
"""

from bench.tools import cvise, gitreduce, shrinkray
from bench.tools.base import Tool

TOOLS: dict[str, Tool] = {
    "gitreduce": gitreduce.TOOL,
    "cvise": cvise.TOOL,
    "shrinkray": shrinkray.TOOL,
}
ALL_TOOLS = tuple(TOOLS)

"""The MCP tools an agent session is given, by name, with what each does to the store.

One source for two readers: the MCP server declares each tool's annotations from it
(readOnlyHint, destructiveHint, idempotentHint: a client tells reads from writes by them),
and `setup codex` approves the read tools from it, leaving writes to the user's policy.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Effect:
    read_only: bool
    destructive: bool = False  # it changes or retires what is there (not only adds)
    idempotent: bool = False  # the same call again changes nothing more


READ = Effect(read_only=True, idempotent=True)

# A recall or a context block for a task is logged (recall_events, for `usage`), which is
# bookkeeping, not a change the agent makes: both count as reads.
TOOLS: dict[str, Effect] = {
    "org_recall": READ,
    "org_remember": Effect(read_only=False),
    "org_forget": Effect(read_only=False, destructive=True, idempotent=True),
    "org_facts": READ,
    "org_search": READ,
    "org_sessions_search": READ,
    "org_notebook": Effect(read_only=False, destructive=True),  # replace and remove change entries
    "org_context": READ,
}
READ_TOOLS = tuple(name for name, effect in TOOLS.items() if effect.read_only)

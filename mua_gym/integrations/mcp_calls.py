"""A tool call as MCP clients make it, played as a step of a mua_gym env, and its answer as a tool result's text.

What the MCP server (:mod:`mua_gym.integrations.mcp`, MCP SDK 2.x) and OpenEnv's ``/mcp`` route
(:mod:`mua_gym.integrations.openenv`, whose venv carries MCP SDK 1.x) do alike; it imports no MCP SDK.

- :data:`SEND` (``send_message_to_user(message)``) sends words to the simulated user; its result is the user's
  reply. Every other name is one of the domain's agent tools; telecom's user-side tools are never listed.
- :func:`listed_tools` is the listing: name, description and JSON input schema of each.
- :func:`call_action` is the env action a call makes; :func:`call_answer` the text and error flag of its result.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ENDED", "MAX_TEXT", "SEND", "SEND_SCHEMA", "call_action", "call_answer", "call_error", "listed_tools"]

#: The tool that sends words to the simulated user and returns its reply.
SEND = "send_message_to_user"
SEND_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"message": {
    "type": "string", "description": "What to tell the customer; the reply is the customer's next message."}},
    "required": ["message"], "additionalProperties": False}
_SEND_DESCRIPTION = "Send a message to the customer and get their reply."
#: The longest argument text a call may carry (characters of its JSON), as the env reads at most.
MAX_TEXT = 100_000
#: What the last result of an episode ends with.
ENDED = "(The conversation has ended.)"


def listed_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``{"name", "description", "input_schema"}`` for each agent tool schema (``{"type": "function",
    "function": {...}}`` or the inner dict), then :data:`SEND`."""
    listed = []
    for tool in tools:
        function = tool.get("function", tool)
        listed.append({"name": function["name"], "description": str(function.get("description") or ""),
                       "input_schema": function.get("parameters") or {"type": "object", "properties": {}}})
    return listed + [{"name": SEND, "description": _SEND_DESCRIPTION, "input_schema": SEND_SCHEMA}]


def call_error(name: str, arguments: Any) -> str | None:
    """Why a call cannot be played at all (arguments not an object or too long, a :data:`SEND` without a text
    message), or None; the env checks the rest (unknown tools, the domain tools' argument types)."""
    if not isinstance(arguments, dict):
        return "Error: arguments must be a JSON object"
    if len(json.dumps(arguments, default=str)) > MAX_TEXT:
        return f"Error: the arguments are longer than {MAX_TEXT} characters"
    if name == SEND and (set(arguments) != {"message"} or not isinstance(arguments["message"], str)):
        return f"Error: {SEND} takes one argument, message, a text"
    return None


def call_action(name: str, arguments: dict[str, Any]) -> Any:
    """The env action a call makes (one :func:`call_error` passed): a :data:`SEND`'s message, else the tool call."""
    return arguments["message"] if name == SEND else {"name": name, "arguments": arguments}


def call_answer(name: str, observation: list[dict[str, Any]], info: dict[str, Any], ended: bool) -> tuple[str, bool]:
    """The result text of a call that stepped the env, and whether it is an error: the env's refusal of the action;
    else the user's reply to a :data:`SEND`, or the tool's result (an error when it starts with ``Error``);
    :data:`ENDED` follows on the last."""
    if info.get("error"):
        text, error = f"Error: {info['error']}", True
    elif name == SEND:
        said = [str(m.get("content") or "") for m in observation if m.get("role") == "user"]
        text, error = "\n".join(s for s in said if s) or "(no reply)", False
    else:
        text = "\n".join(str(m.get("content") or "") for m in observation if m.get("role") == "tool")
        error = text.startswith("Error")
    return (f"{text}\n{ENDED}" if ended else text), error

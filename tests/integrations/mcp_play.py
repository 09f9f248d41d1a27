"""What the MCP tests play: a plain task of a domain, and the oracle's actions through any MCP client session."""

from __future__ import annotations

import json
from typing import Any

import mua_gym
from mua_gym.eval.agents import OracleAgent
from mua_gym.eval.coverage import behaviours

#: What a call's text ends with once the conversation is over.
ENDED = "(The conversation has ended.)"


def plain(domain: str, skip: int = 0) -> mua_gym.Task:
    """The test task of ``domain`` that writes, hands nothing off and is told straight (the ``skip``-th such)."""
    found = mua_gym.get_domain(domain)
    writes = found.tools.names_of("write")
    for task in found.tasks("test"):
        names = {a.name for a in task.gold_actions}
        if names & writes and "transfer_to_human_agents" not in names and not behaviours(task):
            if skip == 0:
                return task
            skip -= 1
    raise AssertionError(f"no plain {domain} test task")


def oracle_actions(task: mua_gym.Task, skip: frozenset[str] = frozenset()) -> list[tuple[str, dict[str, Any]]]:
    """The oracle's actions as MCP calls (tool calls as calls, messages through send_message_to_user), those of
    the tools ``skip`` names left out."""
    calls = []
    agent = OracleAgent(task)
    for _ in range(2 * len(task.gold_actions) + 6):
        action = agent.act([])
        tool_calls = action.get("tool_calls") or []
        if tool_calls:
            call = tool_calls[0]["function"]
            if call["name"] not in skip:
                calls.append((call["name"], json.loads(call["arguments"])))
        else:
            calls.append(("send_message_to_user", {"message": action["content"]}))
    return calls


async def oracle(session: Any, task: mua_gym.Task, skip: frozenset[str] = frozenset()) -> list[Any]:
    """Plays :func:`oracle_actions` through ``session`` until the conversation ends; every call result."""
    answers = []
    for name, arguments in oracle_actions(task, skip):
        answers.append(await session.call_tool(name, arguments))
        if ENDED in answers[-1].content[0].text:
            break
    return answers

"""Generic tools that many domains offer: safe arithmetic and handing the customer to a human."""

from __future__ import annotations

from mua_gym.arith import evaluate_expression
from mua_gym.tools import ToolError, tool

__all__ = ["calculate", "transfer_to_human_agents"]


_ALLOWED = set("0123456789+-*/(). ")


@tool(kind="generic")
def calculate(expression: str) -> str:
    """Work out an arithmetic expression; the result is rounded to two decimals.

    Args:
        expression: Numbers, parentheses, spaces and the operators + - * /, e.g. '(19.99 * 2) - 5'.
    """
    # The same characters as tau2's calculate accepts, so the same calls succeed in both.
    if not set(expression) <= _ALLOWED:
        raise ToolError("Invalid characters in expression")
    try:
        value = evaluate_expression(expression)
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    return str(round(value, 2))


@tool(kind="generic")
def transfer_to_human_agents(summary: str) -> str:
    """Transfer the customer to a human agent, with a summary of their issue. Only when the request cannot be
    handled within the policy and the available tools, or when the customer explicitly asks for a human.

    Args:
        summary: A short summary of the customer's issue.
    """
    return "Transfer successful"

"""Safe arithmetic for ``calculate`` tools: the expression is parsed, never ``eval``-ed.

Numbers keep Python's own types while the expression is worked out (exact integers, floats), so results
equal what Python's evaluation gives, including its overflow errors. The one guard: a power whose result
would exceed ``MAX_BITS`` bits is refused up front, where Python would spend minutes building it.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any, Callable

__all__ = ["ArithmeticError_", "evaluate_expression"]

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
MAX_LENGTH = 100_000
MAX_BITS = 1 << 17


class ArithmeticError_(ValueError):
    """The expression is not plain arithmetic, or cannot be computed."""


def evaluate_expression(expression: str) -> float:
    """The value of an arithmetic expression of numbers, + - * / // % ** and parentheses, as a float."""
    if len(expression) > MAX_LENGTH:
        raise ArithmeticError_("expression is too long")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        raise ArithmeticError_(f"invalid expression: {expression!r}") from None
    except (RecursionError, MemoryError):
        raise ArithmeticError_("expression is nested too deeply") from None
    try:
        value = _eval(tree.body)
        if isinstance(value, complex):
            raise ArithmeticError_("the result is not a real number")
        return float(value)
    except RecursionError:
        raise ArithmeticError_("expression is nested too deeply") from None
    except ZeroDivisionError as exc:
        raise ArithmeticError_(str(exc)) from None
    except OverflowError as exc:
        raise ArithmeticError_(str(exc)) from None


def _pow(base: Any, exponent: Any) -> Any:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        if exponent * math.log2(abs(base)) > MAX_BITS:
            raise ArithmeticError_("int too large to convert to float")
    return operator.pow(base, exponent)


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            return _pow(left, right)
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    raise ArithmeticError_("only numbers, + - * / // % ** and parentheses are allowed")

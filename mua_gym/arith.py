"""Safe arithmetic for ``calculate`` tools: the expression is parsed, never ``eval``-ed."""

from __future__ import annotations

import ast
import operator
from typing import Any, Callable

__all__ = ["ArithmeticError_", "evaluate_expression"]

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_MAX_LENGTH = 500
_MAX_EXPONENT = 100


class ArithmeticError_(ValueError):
    """The expression is not plain arithmetic, or cannot be computed."""


def evaluate_expression(expression: str) -> float:
    """The value of an arithmetic expression of numbers, + - * / // % ** and parentheses."""
    if len(expression) > _MAX_LENGTH:
        raise ArithmeticError_("expression is too long")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        raise ArithmeticError_(f"invalid expression: {expression!r}") from None
    value = _eval(tree.body)
    if isinstance(value, complex):
        raise ArithmeticError_("the result is not a real number")
    return float(value)


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            left = float(left)  # a float power overflows at once where an exact integer power would run long
        try:
            return _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise ArithmeticError_("division by zero") from None
        except OverflowError:
            raise ArithmeticError_("result too large") from None
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    raise ArithmeticError_("only numbers, + - * / // % ** and parentheses are allowed")

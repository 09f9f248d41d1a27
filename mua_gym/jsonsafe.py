"""JSON and text from an agent, read and written without surprises.

Everything the env decodes or encodes on an agent's behalf goes through here, so that every way JSON can fail
(broken syntax, nesting too deep for the parser, an integer literal past Python's int-from-str limit, NaN and
infinities, which are not JSON values, circular or unencodable objects) comes back as one :class:`JSONError`
whose message says in plain words what was wrong. :func:`clean_text` makes a string writable as UTF-8 (lone
surrogates become U+FFFD) where text enters an episode's record.
"""

from __future__ import annotations

import json
import math
import re
import sys
import threading
from typing import Any, Callable, NoReturn

__all__ = ["JSONError", "MAX_INT_DIGITS", "clean_text", "dumps", "first_object", "loads", "loads_shape",
           "flat_json_copy", "plain_object"]

_SURROGATE = re.compile("[\ud800-\udfff]")
#: Longer integer literals are refused: Python cannot turn them into ints (sys.get_int_max_str_digits).
MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300


class JSONError(ValueError):
    """JSON that cannot be read or written; the message says why, without Python internals.

    ``well_formed`` is True where the text is valid JSON syntax and only a value in it is refused.
    """

    def __init__(self, message: str, well_formed: bool = False) -> None:
        super().__init__(message)
        self.well_formed = well_formed


def _refuse_constant(name: str) -> NoReturn:
    raise JSONError(f"{name} is not a JSON number", well_formed=True)


def _bounded_int(literal: str) -> int:
    if len(literal.lstrip("-")) > MAX_INT_DIGITS:
        raise JSONError(f"integer too long (more than {MAX_INT_DIGITS} digits)", well_formed=True)
    return int(literal)


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):  # 1e999 reads as infinity
        raise JSONError(f"number {literal[:40]} is out of range", well_formed=True)
    return value


def _decode(text: str, decoder: json.JSONDecoder) -> Any:
    """``decoder``'s value for ``text``; its failures made :class:`JSONError`."""
    try:
        if isinstance(text, str) and not text.startswith("\ufeff"):
            return decoder.decode(text)  # (one decoder for every call: json.loads with hooks builds one each time)
        return json.loads(text, parse_int=decoder.parse_int, parse_float=decoder.parse_float,
                          parse_constant=decoder.parse_constant)  # bytes, a BOM: json.loads's own checks
    except json.JSONDecodeError as exc:
        raise JSONError(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise JSONError("nested too deeply") from None


def loads(text: str) -> Any:
    """The value of a JSON text; raises :class:`JSONError` for anything that is not plain, finite JSON."""
    return _decode(text, _STRICT)


#: How many candidate objects :func:`first_object` tries before it gives up (a reply is prose and one object).
MAX_OBJECT_TRIES = 64


def first_object(text: str) -> Any:
    """The first JSON object embedded in ``text`` (models wrap JSON in prose or code fences); raises
    :class:`JSONError` where there is none.

    Each ``{`` that has a matching ``}`` is tried in turn (the first :data:`MAX_OBJECT_TRIES`), as the text up to
    that brace. One stack pass finds the matches, and the tries together read at most a few times the text, so
    nested or unclosed braces stay linear.
    """
    closing: dict[int, int] = {}
    opened: list[int] = []
    for at, char in enumerate(text):
        if char == "{":
            opened.append(at)
        elif char == "}" and opened:
            closing[opened.pop()] = at
    budget = 4 * len(text) + 4096
    for start in sorted(closing)[:MAX_OBJECT_TRIES]:
        end = closing[start] + 1
        budget -= end - start
        if budget < 0:
            break
        try:
            return loads(text[start:end])
        except JSONError:
            continue
    raise JSONError("no JSON object in the text")


def loads_shape(text: str) -> Any:
    """The structure of a JSON text whose numbers :func:`loads` may refuse (every number reads as 0), to tell
    what it was meant to be; raises :class:`JSONError` where the syntax itself is broken."""
    return _decode(text, _SHAPE)


def _zero(literal: str) -> int:
    return 0


_STRICT = json.JSONDecoder(parse_int=_bounded_int, parse_float=_finite_float, parse_constant=_refuse_constant)
_SHAPE = json.JSONDecoder(parse_int=_zero, parse_float=_zero, parse_constant=_zero)


_local = threading.local()


def _encoder() -> Callable[[Any], str]:
    """This thread's ``json.dumps`` with the default options, its C encoder made once (json.dumps makes one per
    call, which costs more than writing a small object); ``json.dumps`` itself where there is no C encoder."""
    encode = getattr(_local, "encode", None)
    if encode is None:
        make = json.encoder.c_make_encoder
        if make is None:
            encode = json.dumps
        else:
            markers: dict[int, Any] = {}
            write = make(markers, json.JSONEncoder().default, json.encoder.encode_basestring_ascii, None, ": ", ", ",
                         False, False, True)  # (json.dumps's defaults: no sort, no skipkeys, NaN written)

            def encode(value: Any) -> str:
                try:
                    return "".join(write(value, 0))
                except BaseException:
                    markers.clear()  # (an encoding cut short leaves its open containers marked)
                    raise
        _local.encode = encode
    return encode


def dumps(value: Any) -> str:
    """The JSON text of ``value`` (NaN and infinities written as their JavaScript names, as ``json`` does, so
    that the reader refuses them with a clear message); raises :class:`JSONError` for what cannot be written."""
    try:
        return _encoder()(value)
    except RecursionError:
        raise JSONError("nested too deeply") from None
    except ValueError as exc:
        message = str(exc)
        if "Circular reference" in message:
            raise JSONError("a circular reference") from None
        if "integer string conversion" in message:
            raise JSONError(f"integer too long (more than {MAX_INT_DIGITS} digits)") from None
        raise JSONError(message) from None
    except TypeError as exc:  # sets, bytes, objects, non-string keys ...
        raise JSONError(str(exc)) from None


def clean_text(text: str) -> str:
    """``text`` itself if it encodes as UTF-8, else a copy with every surrogate code point replaced by U+FFFD."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    # The codec's own "replace" runs at C speed (a regex or str.translate costs ~0.3 us per surrogate); it writes "?"
    # for each surrogate, so the text's own "?" are parked meanwhile on a private-use character it does not hold.
    for parking in "\ue000\ue001\ue002\uf8ff":
        if parking not in text:
            parked = text.replace("?", parking).encode("utf-8", "replace").decode("utf-8")
            return parked.replace("?", "\ufffd").replace(parking, "?")
    return _SURROGATE.sub("\ufffd", text)


_SCALARS = (str, int, bool, type(None))


def plain_object(value: Any) -> bool:
    """Whether ``value`` is a dict that :func:`loads` would give back from its :func:`dumps` text as it is: only
    dicts with ``str`` keys, lists, strings, ints, finite floats, booleans and None, nowhere a subclass or a
    tuple. One pass over the value, without recursion (call it on values :func:`dumps` could write)."""
    if type(value) is not dict:
        return False
    nested: list[Any] = []
    for key, item in value.items():  # (the common arguments: flat, read without the stack)
        if type(key) is not str:
            return False
        kind = type(item)
        if kind is dict or kind is list:
            nested.append(item)
        elif kind not in _SCALARS and not (kind is float and math.isfinite(item)):
            return False
    while nested:
        item = nested.pop()
        kind = type(item)
        if kind is dict:
            for key, inner in item.items():
                if type(key) is not str:
                    return False
                nested.append(inner)
        elif kind is list:
            nested.extend(item)
        elif kind not in _SCALARS and not (kind is float and math.isfinite(item)):
            return False
    return True


_INT_LIMIT = 10 ** MAX_INT_DIGITS


def flat_json_copy(value: Any) -> dict[str, Any] | None:
    """A copy of ``value`` where it is a flat JSON object that :func:`dumps` writes and :func:`loads` reads back
    as it is (``str`` keys; values strings, ints :func:`loads` accepts, finite floats, booleans, None); else None.
    Its values cannot change, so the copy stands for ``value`` as it was, whatever later happens to ``value``."""
    if type(value) is not dict:
        return None
    for key, item in value.items():
        if type(key) is not str:
            return None
        kind = type(item)
        if kind is int:
            if not -_INT_LIMIT < item < _INT_LIMIT:
                return None
        elif kind is float:
            if not math.isfinite(item):
                return None
        elif not (kind is str or kind is bool or item is None):
            return None
    return dict(value)

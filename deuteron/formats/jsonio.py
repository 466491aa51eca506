"""JSON in and out at any depth, without recursion.

A profile of 10 000 nested scopes is a JSON document 20 000 levels deep. ``json.dumps`` and
``json.loads`` recurse (and from Python 3.12 their C recursion limit is fixed near 10 000), orjson
stops at 1024 levels. So trees are written by :func:`tree_chunks`, which walks them with an
explicit stack and lets ``json.dumps`` encode only each node's flat fields; and documents that
orjson and json refuse for depth are read by :func:`loads_iterative`, a small parser with an
explicit stack. Well-formed shallow files still take the fast path (orjson, then json).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any, TypeVar

N = TypeVar("N")

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}


class JSONError(ValueError):
    """Not valid JSON; the message says where."""


class NotText(JSONError):
    """Bytes that are not UTF-8 text at all."""


def loads(data: bytes | str) -> Any:
    """Parse JSON: orjson first (several times faster on large profiles), json for what orjson
    refuses (integers beyond 64 bits, NaN literals), the iterative parser for deep nesting."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency, this is a fallback
        orjson = None  # type: ignore[assignment]
    if orjson is not None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            if "depth" in str(exc).lower():
                return loads_iterative(_text(data))
    text = _text(data)
    try:
        return json.loads(text)
    except RecursionError:
        return loads_iterative(text)
    except json.JSONDecodeError as exc:
        raise JSONError(f"line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:  # an integer of more than sys.get_int_max_str_digits() digits
        raise JSONError(str(exc)) from None


def _text(data: bytes | str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise NotText("not a text file (expected JSON)") from None


def _where(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line}, column {col}"


def loads_iterative(text: str) -> Any:
    """A JSON parser with an explicit stack: any depth, the same values as ``json.loads``."""
    end = len(text)
    pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
    stack: list[tuple[list[Any] | dict[str, Any], str | None]] = []  # open containers, pending key
    key: str | None
    result: Any = None
    have_result = False
    while True:
        if pos >= end:
            raise JSONError(f"{_where(text, pos)}: unexpected end of the document")
        ch = text[pos]
        # --- a value ---
        if ch == "{" or ch == "[":
            container: list[Any] | dict[str, Any] = {} if ch == "{" else []
            pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
            closing = "}" if ch == "{" else "]"
            if pos < end and text[pos] == closing:
                value: Any = container
                pos += 1
            else:
                if ch == "{":
                    key, pos = _key(text, pos)
                    stack.append((container, key))
                else:
                    stack.append((container, None))
                continue
        elif ch == '"':
            value, pos = scanstring(text, pos + 1, True)
        elif ch in "-0123456789":
            m = _NUMBER.match(text, pos)
            if m is None or m.end() == pos:
                raise JSONError(f"{_where(text, pos)}: bad number")
            token = m.group(0)
            value = float(token) if m.group(1) or m.group(2) else int(token)
            pos = m.end()
        else:
            for word, literal in _LITERALS.items():
                if text.startswith(word, pos):
                    value, pos = literal, pos + len(word)
                    break
            else:
                for word, number in (
                    ("NaN", float("nan")),
                    ("Infinity", float("inf")),
                    ("-Infinity", -float("inf")),
                ):
                    if text.startswith(word, pos):
                        value, pos = number, pos + len(word)
                        break
                else:
                    raise JSONError(f"{_where(text, pos)}: expecting a value")
        # --- place it, then close what is complete ---
        while True:
            pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
            if not stack:
                result, have_result = value, True
                break
            container, key = stack[-1]
            if isinstance(container, dict):
                container[key] = value  # type: ignore[index]
            else:
                container.append(value)
            sep = text[pos] if pos < end else ""
            if sep == ",":
                pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
                if isinstance(container, dict):
                    key, pos = _key(text, pos)
                    stack[-1] = (container, key)
                break
            closing = "}" if isinstance(container, dict) else "]"
            if sep != closing:
                raise JSONError(f"{_where(text, pos)}: expecting ',' or '{closing}'")
            stack.pop()
            value = container
            pos += 1
        if have_result:
            if pos != end:
                raise JSONError(f"{_where(text, pos)}: extra data after the document")
            return result


def _key(text: str, pos: int) -> tuple[str, int]:
    if pos >= len(text) or text[pos] != '"':
        raise JSONError(f"{_where(text, pos)}: expecting a property name in double quotes")
    key, pos = scanstring(text, pos + 1, True)
    pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
    if pos >= len(text) or text[pos] != ":":
        raise JSONError(f"{_where(text, pos)}: expecting ':'")
    return key, _WS.match(text, pos + 1).end()  # type: ignore[union-attr]


def tree_chunks(
    root: N,
    fields: Callable[[N], Mapping[str, Any]],
    children: Callable[[N], Sequence[N]],
    dumps: Callable[[Any], str] = json.dumps,
    key: str = "children",
) -> Iterator[str]:
    """A tree as JSON text, in pieces: each node is ``{...its fields, "KEY": [its children]}``.

    ``dumps`` encodes one node's flat fields at a time (pass one with the options you need); the
    nesting is written here, with an explicit stack, so any depth works."""
    tail = f',"{key}":['
    stack: list[tuple[Iterator[N], bool]] = []
    node = root
    while True:
        head = dumps(fields(node))
        kids = children(node)
        if kids:
            yield head[:-1] + tail if head != "{}" else "{" + tail[1:]
            stack.append((iter(kids), True))
        else:
            yield head[:-1] + tail + "]}" if head != "{}" else "{" + tail[1:] + "]}"
        while stack:
            it, first = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                yield "]}"
                continue
            stack[-1] = (it, False)
            if not first:
                yield ","
            node = nxt
            break
        else:
            return

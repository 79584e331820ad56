"""kubectl's JSONPath templates: ``-o jsonpath=...``, ``-o custom-columns=...``, ``wait --for=jsonpath=...``.

A template is text with ``{expression}`` parts, as ``kubectl get -o jsonpath`` takes it::

    {.metadata.name}                         a field
    {.items[*].metadata.name}                every item's name, separated by spaces
    {.status.conditions[?(@.type=="Ready")].status}
    {range .items[*]}{.metadata.name}{"\\n"}{end}
    {..image}                                recursive descent
    {.spec.containers[0:2].name}             slices; [-1] counts from the end
    {.metadata.labels['app\\.kubernetes\\.io/name']}

Strings print as they are, other values as JSON; several results are joined with spaces. A
missing field prints nothing (kubectl's ``--allow-missing-template-keys``, its default).

.. versionadded:: 0.2
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import orjson

from olmkit.errors import UsageError

__all__ = ["JSONPath", "format_value"]

_MISSING: Final = object()
_FIELD: Final = re.compile(r"\.(\*|[^.\[\]]+)")
_FILTER: Final = re.compile(r"^\?\(\s*@((?:\.[^\s=!<>]+|\[[^\]]*\])*)\s*(?:(==|!=|<=|>=|<|>)\s*(.+?))?\s*\)$")


def format_value(value: Any) -> str:
    """One result as kubectl prints it: strings raw, the rest as JSON."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _literal(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"jsonpath: {text!r} is not a literal (a quoted string, a number, true or false)") from None


_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r"}


def _unescape(text: str) -> str:
    """``\\n``, ``\\t``, ``\\r``; any other escaped character stands for itself (``\\.`` is ``.``)."""
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), text)


class _Path:
    """A compiled path: steps applied to a list of current values."""

    def __init__(self, text: str, template: str) -> None:
        self.text = text
        self.template = template
        self.absolute = text.startswith("$")
        self.steps = self._compile(text[1:] if text[:1] in ("$", "@") else text)

    def _error(self, what: str) -> UsageError:
        return UsageError(f"jsonpath {self.template!r}: {what}")

    def _compile(self, text: str) -> list[tuple[str, Any]]:
        steps: list[tuple[str, Any]] = []
        i = 0
        while i < len(text):
            if text.startswith("..", i):
                steps.append(("recurse", None))
                i += 1  # the field that follows starts with the second dot
                continue
            if text[i] == ".":
                match = _FIELD.match(text, i)
                if match is None:
                    if i == len(text) - 1:  # "{.}": the value itself
                        break
                    raise self._error(f"cannot parse {text[i:]!r}")
                steps.append(("field", match.group(1)))
                i = match.end()
            elif text[i] == "[":
                end = self._closing(text, i)
                steps.append(self._bracket(text[i + 1 : end]))
                i = end + 1
            else:
                raise self._error(f"unexpected {text[i:]!r} (paths start with '.' or '[')")
        return steps

    def _closing(self, text: str, start: int) -> int:
        end = _matching(text, start, "[", "]")
        if end < 0:
            raise self._error("unclosed '['")
        return end

    def _bracket(self, inner: str) -> tuple[str, Any]:
        inner = inner.strip()
        if inner == "*":
            return ("all", None)
        if inner[:1] in ("'", '"'):
            return ("field", _unescape(inner[1:-1]))
        if inner.startswith("?"):
            match = _FILTER.match(inner)
            if match is None:
                raise self._error(f"cannot parse filter [{inner}]")
            path, op, literal = match.groups()
            return ("filter", (_Path(path or "", self.template), op, None if op is None else _literal(literal)))
        if ":" in inner:
            parts = [p.strip() for p in inner.split(":")]
            try:
                bounds = [int(p) if p else None for p in parts[:3]]
            except ValueError:
                raise self._error(f"bad slice [{inner}]") from None
            return ("slice", slice(*bounds))
        try:
            return ("index", int(inner))
        except ValueError:
            return ("field", inner)

    def find(self, values: Sequence[Any]) -> list[Any]:
        """Every value the path reaches from ``values``."""
        current = list(values)
        for step, arg in self.steps:
            current = [found for value in current for found in self._step(step, arg, value)]
        return current

    def _step(self, step: str, arg: Any, value: Any) -> Iterator[Any]:
        if step == "field":
            if arg == "*":
                if isinstance(value, Mapping):
                    yield from value.values()
                elif isinstance(value, list):
                    yield from value
            elif isinstance(value, Mapping) and arg in value:
                yield value[arg]
        elif step == "index":
            if isinstance(value, list) and -len(value) <= arg < len(value):
                yield value[arg]
        elif step == "all":
            if isinstance(value, list):
                yield from value
            elif isinstance(value, Mapping):
                yield from value.values()
        elif step == "slice":
            if isinstance(value, list):
                yield from value[arg]
        elif step == "recurse":
            yield from _descendants(value)
        elif step == "filter":
            path, op, literal = arg
            items = value if isinstance(value, list) else list(value.values()) if isinstance(value, Mapping) else []
            for item in items:
                if _matches(path.find([item]), op, literal):
                    yield item


def _matching(text: str, start: int, opening: str, closing: str) -> int:
    """The index of the ``closing`` that matches the ``opening`` at ``start`` (quotes skipped), or -1."""
    depth, quote = 0, ""
    for j in range(start, len(text)):
        char = text[j]
        if quote:
            if char == quote and text[j - 1] != "\\":
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == opening:
            depth += 1
        elif char == closing:
            depth -= 1
            if depth == 0:
                return j
    return -1


def _descendants(value: Any) -> Iterator[Any]:
    yield value
    children = value.values() if isinstance(value, Mapping) else value if isinstance(value, list) else ()
    for child in children:
        yield from _descendants(child)


def _matches(found: list[Any], op: str | None, literal: Any) -> bool:
    if op is None:
        return bool(found)
    for value in found:
        try:
            if (
                (op == "==" and value == literal)
                or (op == "!=" and value != literal)
                or (op == "<" and value < literal)
                or (op == ">" and value > literal)
                or (op == "<=" and value <= literal)
                or (op == ">=" and value >= literal)
            ):
                return True
        except TypeError:
            continue
    return False


class JSONPath:
    """A parsed template; :meth:`render` applies it to an object, :meth:`values` gives the results.

    Raises:
        UsageError: the template does not parse (the message quotes it).
    """

    def __init__(self, template: str) -> None:
        self.template = template
        self._parts = self._parse(template)

    def _parse(self, template: str) -> list[tuple[str, Any]]:
        parts: list[tuple[str, Any]] = []
        depth = 0
        i = 0
        text = template if "{" in template else "{" + template + "}"  # kubectl accepts a bare path
        while i < len(text):
            start = text.find("{", i)
            if start < 0:
                parts.append(("text", text[i:]))
                break
            if start > i:
                parts.append(("text", text[i:start]))
            end = self._expression_end(text, start)
            body = text[start + 1 : end].strip()
            if body.startswith("range ") or body == "range":
                parts.append(("range", _Path(body[5:].strip(), template)))
                depth += 1
            elif body == "end":
                if not depth:
                    raise UsageError(f"jsonpath {template!r}: 'end' without 'range'")
                parts.append(("end", None))
                depth -= 1
            elif body[:1] in ("'", '"'):
                parts.append(("text", _unescape(body[1:-1])))
            else:
                parts.append(("path", _Path(body, template)))
            i = end + 1
        if depth:
            raise UsageError(f"jsonpath {template!r}: 'range' without 'end'")
        return parts

    def _expression_end(self, text: str, start: int) -> int:
        end = _matching(text, start, "{", "}")
        if end < 0:
            raise UsageError(f"jsonpath {self.template!r}: unclosed '{{'")
        return end

    def values(self, obj: Any) -> list[Any]:
        """The results of the template's (first) path on ``obj``."""
        for kind, arg in self._parts:
            if kind == "path":
                return list(arg.find([obj]))
        return []

    def render(self, obj: Any) -> str:
        """The template filled in from ``obj``."""
        out: list[str] = []
        self._run(self._parts, 0, len(self._parts), obj, obj, out)
        return "".join(out)

    def _run(self, parts: list[tuple[str, Any]], start: int, stop: int, root: Any, here: Any, out: list[str]) -> None:
        i = start
        while i < stop:
            kind, arg = parts[i]
            if kind == "text":
                out.append(arg)
            elif kind == "path":
                found = arg.find([root if arg.absolute else here])
                out.append(" ".join(format_value(v) for v in found))
            elif kind == "range":
                end = self._matching_end(parts, i)
                for item in arg.find([root if arg.absolute else here]):
                    self._run(parts, i + 1, end, root, item, out)
                i = end
            i += 1

    @staticmethod
    def _matching_end(parts: list[tuple[str, Any]], start: int) -> int:
        depth = 0
        for j in range(start, len(parts)):
            if parts[j][0] == "range":
                depth += 1
            elif parts[j][0] == "end":
                depth -= 1
                if depth == 0:
                    return j
        return len(parts)  # pragma: no cover - _parse balanced them

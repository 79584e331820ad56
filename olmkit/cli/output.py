"""Printing data: ``-o table|json|yaml`` (and ``wide``) wherever output is data.

Commands that print objects also take kubectl's templates (``-o jsonpath=TEMPLATE``,
``-o custom-columns=HEADER:PATH,...``, see :func:`output_format`), and tables can leave out
their headers and keep long cells short (:func:`render_table`). Output is never coloured.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

import orjson

__all__ = [
    "FORMATS",
    "TEMPLATE_FORMATS",
    "add_output_option",
    "custom_columns",
    "dump_json",
    "dump_yaml",
    "emit",
    "output_format",
    "render_table",
    "shorten",
]

#: ``-o`` formats that carry a template after ``=``.
TEMPLATE_FORMATS = ("jsonpath", "custom-columns")

FORMATS = ("table", "json", "yaml")

Column = tuple[str, str | Callable[[Mapping[str, Any]], Any]]


def output_format(formats: Sequence[str], *, templates: bool = False) -> Callable[[str], str]:
    """The type of ``-o``: one of ``formats`` or, with ``templates``, ``jsonpath=T`` / ``custom-columns=SPEC``.

    A template is checked when the option is parsed, so a broken one is a usage error naming it.
    """

    def parse(text: str) -> str:
        kind, eq, template = text.partition("=")
        if templates and kind in TEMPLATE_FORMATS:
            if not eq or not template:
                raise argparse.ArgumentTypeError(f"{kind} needs a template: -o {kind}=...")
            from olmkit.errors import UsageError

            try:
                custom_columns(template) if kind == "custom-columns" else _jsonpath(template)
            except UsageError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None
            return text
        if text not in formats:
            allowed = [*formats, *(f"{t}=..." for t in TEMPLATE_FORMATS)] if templates else list(formats)
            raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(allowed)})")
        return text

    parse.formats = (*formats, *(f"{t}=" for t in TEMPLATE_FORMATS if templates))  # type: ignore[attr-defined]
    return parse


def add_output_option(
    parser: argparse.ArgumentParser,
    formats: Sequence[str] = FORMATS,
    default: str = "table",
    *,
    templates: bool = False,
) -> None:
    """Add ``-o/--output`` to a command (``templates``: also ``jsonpath=`` and ``custom-columns=``)."""
    if not templates:
        parser.add_argument(
            "-o", "--output", choices=list(formats), default=default, help=f"output format (default {default})"
        )
        return
    parser.add_argument(
        "-o",
        "--output",
        type=output_format(formats, templates=True),
        default=default,
        metavar="FORMAT",
        help=f"output format: {'|'.join(formats)}|jsonpath=TEMPLATE|custom-columns=HEADER:PATH,... (default {default})",
    )


def _jsonpath(template: str) -> Any:
    from olmkit.cli.jsonpath import JSONPath

    return JSONPath(template)


def custom_columns(spec: str) -> list[Column]:
    """``NAME:.metadata.name,PHASE:.status.phase`` as table columns (kubectl's ``-o custom-columns``).

    Raises:
        UsageError: a column is not ``HEADER:PATH`` or its path does not parse.
    """
    from olmkit.errors import UsageError

    columns: list[Column] = []
    for part in spec.split(","):
        header, colon, path = part.partition(":")
        if not colon or not header or not path:
            raise UsageError(f"custom-columns: {part!r} is not HEADER:JSONPATH")
        columns.append((header, _render_with(_jsonpath(path if path.startswith("{") else "{" + path + "}"))))
    return columns


def _render_with(template: Any) -> Callable[[Mapping[str, Any]], str]:
    def cell(row: Mapping[str, Any]) -> str:
        return str(template.render(row)) or "<none>"

    return cell


def shorten(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, ending in ``...`` when cut."""
    return text if len(text) <= width else text[: max(0, width - 3)] + "..."


def dump_json(data: Any) -> str:
    """JSON text, indented, keys in insertion order."""
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=_default).decode()


def dump_yaml(data: Any) -> str:
    """YAML text, keys in insertion order."""
    import yaml  # only -o yaml pays for it

    return yaml.safe_dump(_plain(data), sort_keys=False, default_flow_style=False, allow_unicode=True)


def _default(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    raise TypeError(f"cannot serialize {type(obj).__name__}")


def _plain(data: Any) -> Any:
    """Turn mappings/sequences of any kind into dict/list for the YAML dumper."""
    if isinstance(data, Mapping):
        return {str(k): _plain(v) for k, v in data.items()}
    if isinstance(data, (list, tuple, set, frozenset)):
        return [_plain(v) for v in data]
    return data


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple, set, frozenset)):
        return ",".join(str(v) for v in value)
    return str(value)


def render_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[Column],
    *,
    headers: bool = True,
    max_cell: int | None = None,
) -> str:
    """A kubectl-style table: upper-case headers, columns padded with three spaces.

    Args:
        rows: the rows.
        columns: ``(header, key or function of the row)``.
        headers: print the header line (``--no-headers``: ``False``).
        max_cell: cut longer cells to this many characters (``...`` at the end).
    """
    names = [h.upper() for h, _ in columns]
    body = []
    for row in rows:
        cells = [_cell(get(row) if callable(get) else row.get(get)) for _, get in columns]
        body.append([shorten(c, max_cell) for c in cells] if max_cell else cells)
    shown = [names, *body] if headers else body
    if not shown:
        return ""
    widths = [max(len(r[i]) for r in shown) for i in range(len(names))]
    lines = ["   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in shown]
    return "\n".join(lines)


def emit(
    data: Any,
    fmt: str,
    *,
    columns: Sequence[Column] | None = None,
    rows: Sequence[Mapping[str, Any]] | None = None,
    stream: TextIO | None = None,
) -> None:
    """Print ``data`` in ``fmt``; tables use ``rows`` (default: ``data``) and ``columns``."""
    out = stream or sys.stdout
    if fmt == "json":
        out.write(dump_json(data) + "\n")
    elif fmt == "yaml":
        out.write(dump_yaml(data))
    else:
        table_rows = rows if rows is not None else data
        if columns is None:
            raise ValueError("table output needs columns")
        if table_rows:
            out.write(render_table(table_rows, columns) + "\n")
        else:
            out.write("No resources found.\n")

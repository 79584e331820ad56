"""Printing data: ``-o table|json|yaml`` (and ``wide``) wherever output is data."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

import orjson

__all__ = ["FORMATS", "add_output_option", "dump_json", "dump_yaml", "emit", "render_table"]

FORMATS = ("table", "json", "yaml")

Column = tuple[str, str | Callable[[Mapping[str, Any]], Any]]


def add_output_option(
    parser: argparse.ArgumentParser, formats: Sequence[str] = FORMATS, default: str = "table"
) -> None:
    """Add ``-o/--output`` to a command."""
    parser.add_argument(
        "-o", "--output", choices=list(formats), default=default, help=f"output format (default {default})"
    )


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


def render_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column]) -> str:
    """A kubectl-style table: upper-case headers, columns padded with three spaces."""
    headers = [h.upper() for h, _ in columns]
    body = []
    for row in rows:
        body.append([_cell(get(row) if callable(get) else row.get(get)) for _, get in columns])
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(headers)]
    lines = ["   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [headers, *body]]
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

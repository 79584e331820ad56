"""The type check of an ``olm.constraint`` CEL rule, as upstream's compile step does it.

cel-python parses CEL but does not check it; upstream (cel-go) compiles a rule against an
environment declaring ``properties`` (a list of ``map(string, any)``) and
``semver_compare(any, any) -> int``, and refuses a rule that names something undeclared,
applies an operator to operands it has no overload for, or whose result type is not
``bool`` (a rule of type ``dyn``, such as ``properties[0].value``, is refused too). This
module walks cel-python's parse tree with the same types and says what upstream would.

Where cel-go's overload rules are subtle (comparisons of mixed types, arithmetic on mixed
numbers) the check is lenient and lets the rule through: a rule refused here is one
upstream refuses, and evaluation-time failures stay "no match".

Example:
    >>> import celpy
    >>> type_name(rule_type(celpy.Environment().compile("properties.size()")))
    'int'

.. versionadded:: 0.2
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

__all__ = ["CelTypeError", "rule_type"]

#: a type: a name (``"int"``) or ``("list", elem)`` / ``("map", key, value)``
Type = Any

DYN: Final = "dyn"
BOOL: Final = "bool"
INT: Final = "int"
PROPERTIES: Final = ("list", ("map", "string", DYN))

_TYPE_NAMES: Final = frozenset(
    {"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "dyn"}
)
#: global functions: name -> (arities, result type)
_FUNCTIONS: Final[dict[str, tuple[tuple[int, ...], Type]]] = {
    "size": ((1,), INT),
    "int": ((1,), INT),
    "uint": ((1,), "uint"),
    "double": ((1,), "double"),
    "string": ((1,), "string"),
    "bytes": ((1,), "bytes"),
    "bool": ((1,), BOOL),
    "dyn": ((1,), DYN),
    "type": ((1,), "type"),
    "timestamp": ((1,), "google.protobuf.Timestamp"),
    "duration": ((1,), "google.protobuf.Duration"),
    "matches": ((2,), BOOL),
    "semver_compare": ((2,), INT),
}
_TIME_PARTS: Final = (
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getFullYear",
    "getHours",
    "getMilliseconds",
    "getMinutes",
    "getMonth",
    "getSeconds",
)
#: receiver-style functions: name -> (arities, result type)
_METHODS: Final[dict[str, tuple[tuple[int, ...], Type]]] = {
    "size": ((0,), INT),
    "contains": ((1,), BOOL),
    "startsWith": ((1,), BOOL),
    "endsWith": ((1,), BOOL),
    "matches": ((1,), BOOL),
    **dict.fromkeys(_TIME_PARTS, ((0, 1), INT)),
}
_NUMBERS: Final = frozenset({"int", "uint", "double"})


class CelTypeError(ValueError):
    """A rule upstream's compile step refuses; the text is cel-go's (``ERROR: <input>:L:C: ...``)."""

    def __init__(self, message: str, node: Any = None) -> None:
        meta = getattr(node, "meta", None)
        line, column = getattr(meta, "line", None), getattr(meta, "column", None)
        where = f"<input>:{line}:{column}" if line is not None and column is not None else "<input>"
        super().__init__(f"ERROR: {where}: {message}")


def type_name(t: Type) -> str:
    """A type as cel-go writes it: ``int``, ``list(map(string, dyn))``."""
    if isinstance(t, tuple):
        return f"{t[0]}({', '.join(type_name(a) for a in t[1:])})"
    return str(t)


def rule_type(tree: Any) -> Type:
    """The type of a parsed rule (cel-python's tree), as upstream's checker gives it.

    Raises:
        CelTypeError: an undeclared name or function, or an operator without an overload
            for its operands.
    """
    return _Checker().check(tree, {})


def _token(node: Any) -> str:
    return str(node.children[-1]) if node.children else ""


class _Checker:
    def check(self, node: Any, scope: dict[str, Type]) -> Type:
        node = _descend(node)  # a loop, not one call per wrapper: nesting costs little stack
        method = getattr(self, "_" + node.data, None)
        if method is None:
            raise CelTypeError(f"unsupported expression {node.data}", node)
        result: Type = method(node, scope)
        return result

    def _kids(self, node: Any) -> list[Any]:
        return [c for c in node.children if hasattr(c, "data")]

    def _single(self, node: Any, scope: dict[str, Type]) -> Type:
        return self.check(self._kids(node)[0], scope)

    # -- operators ------------------------------------------------------------------

    def _expr(self, node: Any, scope: dict[str, Type]) -> Type:
        kids = self._kids(node)
        if len(kids) == 1:
            return self.check(kids[0], scope)
        cond, yes, no = (self.check(k, scope) for k in kids)
        self._expect_bool("_?_:_", [cond, yes, no], cond, node)
        if yes == no:
            return yes
        return no if yes == DYN else yes if no == DYN else DYN

    def _expect_bool(self, op: str, args: Sequence[Type], t: Type, node: Any) -> None:
        if t not in (BOOL, DYN):
            applied = ", ".join(type_name(a) for a in args)
            raise CelTypeError(f"found no matching overload for '{op}' applied to '({applied})'", node)

    def _logical(self, op: str, node: Any, scope: dict[str, Type]) -> Type:
        kids = self._kids(node)
        if len(kids) == 1:
            return self.check(kids[0], scope)
        types = [self.check(k, scope) for k in kids]
        for t in types:
            self._expect_bool(op, types, t, node)
        return BOOL

    def _conditionalor(self, node: Any, scope: dict[str, Type]) -> Type:
        return self._logical("_||_", node, scope)

    def _conditionaland(self, node: Any, scope: dict[str, Type]) -> Type:
        return self._logical("_&&_", node, scope)

    def _relation(self, node: Any, scope: dict[str, Type]) -> Type:
        kids = self._kids(node)
        if len(kids) == 1:
            return self.check(kids[0], scope)
        self.check(self._kids(kids[0])[0], scope)
        self.check(kids[1], scope)
        return BOOL

    def _addition(self, node: Any, scope: dict[str, Type]) -> Type:
        return self._arithmetic(node, scope)

    def _multiplication(self, node: Any, scope: dict[str, Type]) -> Type:
        return self._arithmetic(node, scope)

    def _arithmetic(self, node: Any, scope: dict[str, Type]) -> Type:
        kids = self._kids(node)
        if len(kids) == 1:
            return self.check(kids[0], scope)
        op = kids[0].data.rsplit("_", 1)[1]
        left = self.check(self._kids(kids[0])[0], scope)
        right = self.check(kids[1], scope)
        if DYN in (left, right):
            return DYN
        if left == right and (left in _NUMBERS or (op == "add" and (left in ("string", "bytes") or _is(left, "list")))):
            return left
        if op == "sub" and left == right == "google.protobuf.Timestamp":
            return "google.protobuf.Duration"
        if left in ("google.protobuf.Timestamp", "google.protobuf.Duration") and op in ("add", "sub"):
            return left
        if left in _NUMBERS and right in _NUMBERS:
            return DYN  # mixed numbers: cel-go's rules differ by version; not refused here
        symbol = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%"}[op]
        raise CelTypeError(
            f"found no matching overload for '_{symbol}_' applied to '({type_name(left)}, {type_name(right)})'", node
        )

    def _unary(self, node: Any, scope: dict[str, Type]) -> Type:
        kids = self._kids(node)
        if len(kids) == 1:
            return self.check(kids[0], scope)
        operand = self.check(kids[1], scope)
        if kids[0].data == "unary_not":
            self._expect_bool("!_", [operand], operand, node)
            return BOOL
        if operand in (INT, "double", DYN):
            return operand
        raise CelTypeError(f"found no matching overload for '-_' applied to '({type_name(operand)})'", node)

    # -- members --------------------------------------------------------------------

    def _member(self, node: Any, scope: dict[str, Type]) -> Type:
        return self._single(node, scope)

    def _member_dot(self, node: Any, scope: dict[str, Type]) -> Type:
        target = self.check(self._kids(node)[0], scope)
        return self._field(target, _token(node), node)

    def _field(self, target: Type, name: str, node: Any) -> Type:
        if target == DYN:
            return DYN
        if _is(target, "map"):
            return target[2]
        raise CelTypeError(f"type '{type_name(target)}' does not support field selection", node)

    def _member_index(self, node: Any, scope: dict[str, Type]) -> Type:
        target_node, index_node = self._kids(node)
        target = self.check(target_node, scope)
        index = self.check(index_node, scope)
        if target == DYN:
            return DYN
        if _is(target, "list") and index in (INT, "uint", DYN):
            return target[1]
        if _is(target, "map"):
            return target[2]
        raise CelTypeError(
            f"found no matching overload for '_[_]' applied to '({type_name(target)}, {type_name(index)})'", node
        )

    def _member_object(self, node: Any, scope: dict[str, Type]) -> Type:
        raise CelTypeError("undeclared reference to a message type (in container '')", node)

    def _member_dot_arg(self, node: Any, scope: dict[str, Type]) -> Type:
        kids = self._kids(node)
        target_node = kids[0]
        name = str(next(c for c in node.children if not hasattr(c, "data")))
        args = self._kids(kids[1]) if len(kids) > 1 else []
        if name in ("exists", "all", "exists_one", "map", "filter"):
            return self._macro(name, target_node, args, scope, node)
        target = self.check(target_node, scope)
        arg_types = [self.check(a, scope) for a in args]
        found = _METHODS.get(name)
        if found is None or len(args) not in found[0]:
            raise CelTypeError(f"undeclared reference to '{name}' (in container '')", node)
        if name == "size" and target not in ("string", "bytes", DYN) and not _is(target, "list", "map"):
            applied = ", ".join(type_name(t) for t in [target, *arg_types])
            raise CelTypeError(
                f"found no matching overload for 'size' applied to '{type_name(target)}.({applied})'", node
            )
        return found[1]

    def _macro(self, name: str, target_node: Any, args: Sequence[Any], scope: dict[str, Type], node: Any) -> Type:
        target = self.check(target_node, scope)
        if len(args) not in ((3, 2) if name == "map" else (2,)):
            raise CelTypeError(f"undeclared reference to '{name}' (in container '')", node)
        var = args[0]
        var_name = _plain_ident(var)
        if var_name is None:
            raise CelTypeError("argument must be a simple name", var)
        if target == DYN:
            elem: Type = DYN
        elif _is(target, "list") or _is(target, "map"):
            elem = target[1]
        else:
            raise CelTypeError(f"expression of type '{type_name(target)}' cannot be range of a comprehension", node)
        inner = {**scope, var_name: elem}
        body = [self.check(a, inner) for a in args[1:]]
        if name in ("exists", "all", "exists_one"):
            self._expect_bool("_&&_", body, body[0], node)
            return BOOL
        if name == "filter":
            self._expect_bool("_&&_", body, body[0], node)
            return ("list", elem)
        if len(body) == 2:
            self._expect_bool("_&&_", body, body[0], node)
        return ("list", body[-1])

    # -- primaries ------------------------------------------------------------------

    def _primary(self, node: Any, scope: dict[str, Type]) -> Type:
        return self._single(node, scope)

    def _paren_expr(self, node: Any, scope: dict[str, Type]) -> Type:
        return self._single(node, scope)

    def _literal(self, node: Any, scope: dict[str, Type]) -> Type:
        kind = getattr(node.children[0], "type", "")
        return {
            "UINT_LIT": "uint",
            "FLOAT_LIT": "double",
            "INT_LIT": INT,
            "STRING_LIT": "string",
            "MLSTRING_LIT": "string",
            "BYTES_LIT": "bytes",
            "BOOL_LIT": BOOL,
            "NULL_LIT": "null_type",
        }.get(kind, DYN)

    def _ident(self, node: Any, scope: dict[str, Type]) -> Type:
        name = _token(node)
        if name in scope:
            return scope[name]
        if name == "properties":
            return PROPERTIES
        if name in _TYPE_NAMES:
            return "type"
        raise CelTypeError(f"undeclared reference to '{name}' (in container '')", node)

    def _dot_ident(self, node: Any, scope: dict[str, Type]) -> Type:
        return self._ident(node, {})

    def _ident_arg(self, node: Any, scope: dict[str, Type]) -> Type:
        name = str(node.children[0])
        kids = self._kids(node)
        args = self._kids(kids[0]) if kids else []
        if name == "has":
            if len(args) != 1 or not _is_select(args[0]):
                raise CelTypeError("invalid argument to has() macro", node)
            self.check(args[0], scope)
            return BOOL
        found = _FUNCTIONS.get(name)
        for a in args:
            self.check(a, scope)
        if found is None or len(args) not in found[0]:
            raise CelTypeError(f"undeclared reference to '{name}' (in container '')", node)
        return found[1]

    def _dot_ident_arg(self, node: Any, scope: dict[str, Type]) -> Type:
        return self._ident_arg(node, scope)

    def _list_lit(self, node: Any, scope: dict[str, Type]) -> Type:
        kids = self._kids(node)
        elems = [self.check(e, scope) for e in self._kids(kids[0])] if kids else []
        return ("list", _join(elems))

    def _map_lit(self, node: Any, scope: dict[str, Type]) -> Type:
        kids = self._kids(node)
        items = [self.check(e, scope) for e in self._kids(kids[0])] if kids else []
        return ("map", _join(items[0::2]), _join(items[1::2]))


def _is(t: Type, *kinds: str) -> bool:
    return isinstance(t, tuple) and t[0] in kinds


def _join(types: Sequence[Type]) -> Type:
    """The element type of a literal: the common one, else ``dyn``."""
    distinct = set(map(type_name, types))
    return types[0] if len(distinct) == 1 else DYN


def _descend(node: Any) -> Any:
    """The node an expression wrapper stands for (``expr`` -> ... -> ``member``'s child)."""
    while hasattr(node, "data") and node.data in (
        "expr",
        "conditionalor",
        "conditionaland",
        "relation",
        "addition",
        "multiplication",
        "unary",
        "member",
        "primary",
        "paren_expr",
    ):
        kids = [c for c in node.children if hasattr(c, "data")]
        if len(kids) != 1:
            return node
        node = kids[0]
    return node


def _plain_ident(node: Any) -> str | None:
    inner = _descend(node)
    return _token(inner) if getattr(inner, "data", None) == "ident" else None


def _is_select(node: Any) -> bool:
    return getattr(_descend(node), "data", None) == "member_dot"

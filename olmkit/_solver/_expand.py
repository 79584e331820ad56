"""Template expansion: build a solver problem's int arrays straight from shared templates.

A caller whose variables come in large families that share their constraints (many
variables with the same dependency lists) describes them once, as *templates*, and lets
:func:`expand` (C, or its pure twin) find the variables reachable from some roots and lay
out the arrays of :class:`olmkit._solver._problem.Problem` directly, identical to what
:func:`olmkit._solver._problem.flatten` makes of the equivalent :class:`Variable` list.
No Python object is made per variable; identifiers and constraint objects are made on
demand (explanations) by the caller.

Vocabulary (all numbers are ints, everything is domain-free):

* *items*: candidate variables, ``0 .. n_items-1``, grouped in :class:`Block` s (each block
  owns a contiguous item range and numbers its own classes, lists and keys locally).
  Items with the same *slot* (``slot[item]``, identity when ``slot`` is ``None``) are one
  variable: the first item discovered owns it.
* *classes*: every item has one; a class holds the item's constraint templates, in order:
  ``code >= 0`` is a Dependency on the block's list ``code``; ``code < 0`` is
  ``x = -1 - code``: even ``x`` a Prohibited (template ``x // 2``, a caller's number),
  odd ``x`` an error (block error ``(x - 1) // 2``) that stops the expansion when reached.
  A class also has *keys*: at most one variable per key may be chosen (an at-most-one
  group, made a variable of its own when two or more variables share the key), or an
  error (``uerr``) reported once the expansion is complete.
* *lists*: ordered candidate items. A block's list ``p`` holds items of that block
  (local numbers), unless the caller overrides global list ``pred_off + p`` with a list of
  global items (or an error).

Expansion: items are discovered breadth first. The roots (``seeds``) come first; then each
discovered item, in discovery order, contributes the not yet discovered items of its
class's lists, in list order. Variables are numbered: the first ``n_front`` discovered
items, then the *heads* (variables with explicit constraints over items), then the other
discovered items, then the at-most-one groups (in the order their keys first appear).
Each item variable's constraints are its *prefix* constraints (Mandatory, or Conflict with
another item) followed by its class's templates.

.. versionadded:: 0.2
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Sequence

import attrs

from olmkit._solver._problem import Problem
from olmkit._solver.constraints import Variable

__all__ = ["Block", "Expansion", "Heads", "LazyVariables", "expand"]


def _ints(value: Iterable[int]) -> array[int]:
    if isinstance(value, array) and value.typecode == "i":
        return value
    return array("i", value)


def _opt_ints(value: Iterable[int] | None) -> array[int] | None:
    return None if value is None else _ints(value)


@attrs.define
class Block:
    """One family of items with its classes, lists and keys (local numbers).

    Args:
        item_off: global number of the block's item 0.
        pred_off: global number of the block's list 0 (the index of :attr:`Expansion` overrides).
        err_off: global number of the block's error 0.
        item_class: per item, its class.
        class_start: ``n_classes + 1`` offsets into ``class_codes``.
        class_codes: constraint templates (see the module docstring).
        ukey_start: ``n_classes + 1`` offsets into ``ukeys``.
        ukeys: per class, its at-most-one keys (local key numbers).
        uerr: per class, a local error reported if the class's variable exists, or -1
            (``None``: no class has one).
        pred_start: ``n_preds + 1`` offsets into ``pred_items``.
        pred_items: list members (local item numbers).
        pred_err: per list, a local error, or -1 (``None``: no list has one).
        key_map: local key -> global key (``None``: identity).
    """

    item_off: int
    pred_off: int
    err_off: int
    item_class: array[int] = attrs.field(converter=_ints)
    class_start: array[int] = attrs.field(converter=_ints)
    class_codes: array[int] = attrs.field(converter=_ints)
    ukey_start: array[int] = attrs.field(converter=_ints)
    ukeys: array[int] = attrs.field(converter=_ints)
    pred_start: array[int] = attrs.field(converter=_ints)
    pred_items: array[int] = attrs.field(converter=_ints)
    uerr: array[int] | None = attrs.field(default=None, converter=_opt_ints)
    pred_err: array[int] | None = attrs.field(default=None, converter=_opt_ints)
    key_map: array[int] | None = attrs.field(default=None, converter=_opt_ints)

    @property
    def n_items(self) -> int:
        return len(self.item_class)

    @property
    def n_preds(self) -> int:
        return len(self.pred_start) - 1


@attrs.define
class Heads:
    """Variables with explicit constraints over items (placed after the first ``n_front``).

    ``start`` has ``n_heads + 1`` offsets into ``cons``, three ints per constraint: kind
    (Mandatory, Prohibited or Dependency of :mod:`olmkit._solver._pure`), start and length
    of its operands in ``items`` (global items).
    """

    start: array[int] = attrs.field(factory=lambda: array("i", [0]), converter=_ints)
    cons: array[int] = attrs.field(factory=lambda: array("i"), converter=_ints)
    items: array[int] = attrs.field(factory=lambda: array("i"), converter=_ints)

    @property
    def n_heads(self) -> int:
        return len(self.start) - 1


@attrs.define
class Expansion:
    """The result of :func:`expand`.

    ``error`` is -1, or the global error that stopped the expansion (the problem arrays
    are then empty). ``var_item`` gives, per variable, the item that owns it, ``-1 - h``
    for head ``h`` and ``-1 - n_heads - g`` for at-most-one group ``g``; ``group_keys``
    gives each group's global key. The C implementation's arrays are memoryviews of C ints
    over the memory it wrote them in (read, indexed and compared as the ``array('i')`` s of
    the pure one).
    """

    error: int
    n_vars: int
    var_item: array[int]
    group_keys: array[int]
    nodes: array[int]
    args: array[int]
    top: array[int]
    top_owner: array[int]
    top_index: array[int]
    anchor_start: int
    n_anchors: int
    vdep_start: array[int]
    vdep: array[int]

    def problem(self, variables: Sequence[Variable]) -> Problem:
        """The solver problem, with ``variables`` (typically lazy) for identifiers and texts."""
        return Problem(
            variables=variables,
            n_vars=self.n_vars,
            nodes=self.nodes,
            args=self.args,
            top=self.top,
            top_owner=self.top_owner,
            top_index=self.top_index,
            anchor_start=self.anchor_start,
            n_anchors=self.n_anchors,
            vdep_start=self.vdep_start,
            vdep=self.vdep,
        )


class LazyVariables(Sequence[Variable]):
    """A sequence of variables made on first access by ``make(index)`` and kept."""

    def __init__(self, n: int, make: Callable[[int], Variable]) -> None:
        self._n = n
        self._make = make
        self._made: dict[int, Variable] = {}

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: int) -> Variable:  # type: ignore[override]
        if not -self._n <= index < self._n:
            raise IndexError(index)
        index %= self._n
        found = self._made.get(index)
        if found is None:
            found = self._made[index] = self._make(index)
        return found


def expand(
    blocks: Sequence[Block],
    *,
    n_items: int,
    seeds: Sequence[int],
    n_front: int = 0,
    heads: Heads | None = None,
    prefix: Sequence[int] = (),
    n_keys: int = 0,
    slot: Sequence[int] | None = None,
    overrides: Sequence[tuple[Sequence[int], int]] = (),
    override_of: Sequence[int] | None = None,
) -> Expansion:
    """Find the variables reachable from ``seeds`` and lay out their problem arrays.

    Args:
        blocks: the item families, by ascending ``item_off``, covering ``0 .. n_items-1``.
        n_items: number of global items.
        seeds: the roots, in order.
        n_front: how many discovered items come before the heads.
        heads: variables with explicit constraints over items.
        prefix: ``(item, kind, other item)`` triples (kind Mandatory or Conflict).
        n_keys: number of global at-most-one keys.
        slot: per item, its variable slot (``None``: every item is its own).
        overrides: ``(global items, global error or -1)`` lists replacing block lists.
        override_of: per global list, the index of its override in ``overrides`` or -1
            (``None``: no overrides).

    Returns:
        The :class:`Expansion`.
    """
    from olmkit._solver import _encode

    _check(blocks, n_items, slot, override_of)
    n_preds = max((b.pred_off + b.n_preds for b in blocks), default=0)
    ov_index = array("i", [-1]) * n_preds if override_of is None else _ints(override_of)
    ov_start = array("i", [0])
    ov_items = array("i")
    ov_err = array("i")
    for members, err in overrides:
        ov_items.extend(members)
        ov_start.append(len(ov_items))
        ov_err.append(err)
    result = _encode.get().expand(
        list(blocks),
        n_items,
        _opt_ints(slot),
        ov_index,
        ov_start,
        ov_items,
        ov_err,
        _ints(seeds),
        n_front,
        heads if heads is not None else Heads(),
        _ints(prefix),
        n_keys,
    )
    return Expansion(*result)


def _check(
    blocks: Sequence[Block], n_items: int, slot: Sequence[int] | None, override_of: Sequence[int] | None
) -> None:
    """Cheap shape checks, so that bad input is an exception and never a crash in C."""
    at = 0
    for b in blocks:
        n_classes = len(b.class_start) - 1
        bad = (
            b.item_off != at
            or n_classes < 0
            or len(b.ukey_start) != n_classes + 1
            or (b.uerr is not None and len(b.uerr) != n_classes)
            or (b.pred_err is not None and len(b.pred_err) != b.n_preds)
            or (b.n_items > 0 and not (0 <= min(b.item_class) and max(b.item_class) < n_classes))
        )
        if bad:
            raise ValueError(f"malformed expansion block at item {b.item_off}")
        at += b.n_items
    if at != n_items:
        raise ValueError(f"the blocks cover {at} items, not {n_items}")
    if slot is not None and len(slot) != n_items:
        raise ValueError(f"slot has {len(slot)} entries for {n_items} items")
    n_preds = max((b.pred_off + b.n_preds for b in blocks), default=0)
    if override_of is not None and len(override_of) != n_preds:
        raise ValueError(f"override_of has {len(override_of)} entries for {n_preds} lists")

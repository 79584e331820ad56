"""Pure-Python twin of ``encode.c``, part three: template expansion (``olm_expand``).

See :mod:`olmkit._solver._expand` for the vocabulary; same signature and output as the C function.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from olmkit._solver._pure_encode import ATMOST, CONFLICT, DEPENDENCY, MANDATORY, PROHIBITED

__all__ = ["expand"]


def expand(
    blocks: Sequence[Any],
    n_items: int,
    slot: array[int] | None,
    ov_index: array[int],
    ov_start: array[int],
    ov_items: array[int],
    ov_err: array[int],
    seeds: array[int],
    n_front: int,
    heads: Any,
    prefix: array[int],
    n_keys: int,
) -> tuple[Any, ...]:
    """Expand templates into problem arrays (see :mod:`olmkit._solver._expand`).

    Args:
        blocks: the :class:`~olmkit._solver._expand.Block` s, by ascending ``item_off``.
        n_items: number of global items.
        slot: per item, its variable slot (``None``: identity).
        ov_index: per global list, an override number or -1.
        ov_start: offsets into ``ov_items`` per override (one more than overrides).
        ov_items: override members (global items).
        ov_err: per override, a global error or -1.
        seeds: the roots, in order.
        n_front: how many discovered items come before the heads.
        heads: the :class:`~olmkit._solver._expand.Heads`.
        prefix: ``(item, kind, other item)`` triples: an item's leading Mandatory or
            Conflict constraints, in order.
        n_keys: number of global keys.

    Returns:
        ``(error, n_vars, var_item, group_keys, nodes, args, top, top_owner, top_index,
        anchor_start, n_anchors, vdep_start, vdep)``.
    """
    starts = [b.item_off for b in blocks]

    def block_of(item: int) -> Any:
        return blocks[bisect_right(starts, item) - 1]

    owner = [-1] * n_items
    order: list[int] = []

    def discover(item: int) -> None:
        s = slot[item] if slot is not None else item
        if owner[s] < 0:
            owner[s] = item
            order.append(item)

    empty = array("i")

    def fail(err: int) -> tuple[Any, ...]:
        return (err, 0, empty, empty, empty, empty, empty, empty, empty, 0, 0, array("i", [0]), empty)

    for item in seeds:
        discover(item)
    done = [bytearray(len(b.class_start) - 1) for b in blocks]
    block_index = {id(b): i for i, b in enumerate(blocks)}
    qi = 0
    while qi < len(order):
        item = order[qi]
        qi += 1
        b = block_of(item)
        c = b.item_class[item - b.item_off]
        flags = done[block_index[id(b)]]
        if flags[c]:
            continue
        flags[c] = 1
        for t in range(b.class_start[c], b.class_start[c + 1]):
            code = b.class_codes[t]
            if code < 0:
                x = -1 - code
                if x & 1:
                    return fail(b.err_off + (x >> 1))
                continue
            k = ov_index[b.pred_off + code]
            if k >= 0:
                if ov_err[k] >= 0:
                    return fail(ov_err[k])
                for j in range(ov_start[k], ov_start[k + 1]):
                    discover(ov_items[j])
                continue
            if b.pred_err is not None and b.pred_err[code] >= 0:
                return fail(b.err_off + b.pred_err[code])
            off = b.item_off
            for j in range(b.pred_start[code], b.pred_start[code + 1]):
                discover(off + b.pred_items[j])

    # variable numbers: front items, heads, the other items, then the groups
    n_heads = len(heads.start) - 1
    var_of_slot = [0] * n_items
    var_item = array("i")
    for p, item in enumerate(order):
        if p == n_front:
            var_item.extend(range(-1, -1 - n_heads, -1))
        var_item.append(item)
    if len(order) <= n_front:
        var_item.extend(range(-1, -1 - n_heads, -1))
    for i, item in enumerate(var_item):
        if item >= 0:
            var_of_slot[slot[item] if slot is not None else item] = i + 1

    def var(item: int) -> int:
        return var_of_slot[slot[item] if slot is not None else item]

    # at-most-one groups, in the order their keys first appear
    members: dict[int, list[int]] = {}
    for i, item in enumerate(var_item):
        if item < 0:
            continue
        b = block_of(item)
        c = b.item_class[item - b.item_off]
        if b.uerr is not None and b.uerr[c] >= 0:
            return fail(b.err_off + b.uerr[c])
        for t in range(b.ukey_start[c], b.ukey_start[c + 1]):
            key = b.ukeys[t]
            if b.key_map is not None:
                key = b.key_map[key]
            members.setdefault(key, []).append(i + 1)
    group_keys = array("i", [k for k, m in members.items() if len(m) >= 2])
    for g in range(len(group_keys)):
        var_item.append(-1 - n_heads - g)

    # prefixes by slot
    pre: dict[int, list[tuple[int, int]]] = {}
    for t in range(0, len(prefix), 3):
        item = prefix[t]
        s = slot[item] if slot is not None else item
        pre.setdefault(s, []).append((prefix[t + 1], prefix[t + 2]))

    nodes = array("i")
    args = array("i")
    top = array("i")
    top_owner = array("i")
    top_index = array("i")
    anchors = array("i")
    vdep_start = array("i", [0])
    vdep = array("i")

    # one record per constraint, as flatten() lays out the equivalent Variable list
    layout: list[tuple[int, int, Sequence[int]]] = []
    for i, item in enumerate(var_item):
        x = i + 1
        anchor = False
        layout.clear()
        if item >= 0:
            for kind, other in pre.get(slot[item] if slot is not None else item, ()):
                if kind == MANDATORY:
                    layout.append((MANDATORY, 0, ()))
                    anchor = True
                else:
                    layout.append((CONFLICT, 0, (var(other),)))
            b = block_of(item)
            c = b.item_class[item - b.item_off]
            for t in range(b.class_start[c], b.class_start[c + 1]):
                code = b.class_codes[t]
                if code < 0:
                    layout.append((PROHIBITED, 0, ()))
                    continue
                ki = ov_index[b.pred_off + code]
                if ki >= 0:
                    deps = [var(ov_items[j]) for j in range(ov_start[ki], ov_start[ki + 1])]
                else:
                    off = b.item_off
                    deps = [var(off + b.pred_items[j]) for j in range(b.pred_start[code], b.pred_start[code + 1])]
                layout.append((DEPENDENCY, 0, deps))
        elif -item <= n_heads:
            h = -1 - item
            for t in range(heads.start[h], heads.start[h + 1]):
                kind, start, length = heads.cons[3 * t], heads.cons[3 * t + 1], heads.cons[3 * t + 2]
                if kind == MANDATORY:
                    layout.append((MANDATORY, 0, ()))
                    anchor = True
                elif kind == PROHIBITED:
                    layout.append((PROHIBITED, 0, ()))
                else:
                    layout.append((DEPENDENCY, 0, [var(heads.items[j]) for j in range(start, start + length)]))
        else:
            g = -1 - item - n_heads
            layout.append((MANDATORY, 0, ()))
            layout.append((ATMOST, 1, members[group_keys[g]]))
            anchor = True
        for k, (kind, param, ops) in enumerate(layout):
            n = len(nodes) // 5
            nodes.extend((kind, x, param, len(args) if kind >= DEPENDENCY else 0, len(ops)))
            args.extend(ops)
            if kind == DEPENDENCY and ops:
                vdep.append(n)
            top.append(n)
            top_owner.append(i)
            top_index.append(k)
        if anchor:
            anchors.append(x)
        vdep_start.append(len(vdep))

    anchor_start = len(args)
    args.extend(anchors)
    n_vars = len(var_item)
    return (
        -1,
        n_vars,
        var_item,
        group_keys,
        nodes,
        args,
        top,
        top_owner,
        top_index,
        anchor_start,
        len(anchors),
        vdep_start,
        vdep,
    )

"""Template expansion: the arrays are flatten()'s for the equivalent variables; C and pure agree."""

from __future__ import annotations

from array import array
from collections import deque

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from olmkit._solver import (
    AtMost,
    Block,
    Conflict,
    Dependency,
    Heads,
    Mandatory,
    Prohibited,
    Variable,
    _encode,
    expand,
    solve,
    solve_problem,
)
from olmkit._solver._problem import flatten
from olmkit._solver._pure import DEPENDENCY, MANDATORY, PROHIBITED

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    # the implementation fixture only selects C or pure; it holds no state between examples
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
ARRAYS = ("nodes", "args", "top", "top_owner", "top_index", "vdep_start", "vdep")


@st.composite
def template_problems(draw):
    """Random blocks, lists, keys, slots, overrides, heads and prefixes (with rare errors)."""
    n_blocks = draw(st.integers(1, 3))
    blocks = []
    item_off = pred_off = err_off = 0
    n_keys = draw(st.integers(0, 4))
    for _ in range(n_blocks):
        n_items = draw(st.integers(1, 6))
        n_classes = draw(st.integers(1, 4))
        n_preds = draw(st.integers(0, 3))
        n_errs = draw(st.integers(0, 2))
        n_local_keys = draw(st.integers(0, 3)) if n_keys else 0
        item_class = [draw(st.integers(0, n_classes - 1)) for _ in range(n_items)]
        code = st.one_of(
            st.integers(0, n_preds - 1) if n_preds else st.nothing(),
            st.integers(0, 2).map(lambda t: -1 - 2 * t),
            st.integers(0, n_errs - 1).map(lambda e: -2 - 2 * e) if n_errs else st.nothing(),
        )
        class_codes: list[int] = []
        class_start = [0]
        ukeys: list[int] = []
        ukey_start = [0]
        for _ in range(n_classes):
            class_codes += draw(st.lists(code, max_size=3)) if n_preds or n_errs else []
            class_start.append(len(class_codes))
            if n_local_keys:
                ukeys += draw(st.lists(st.integers(0, n_local_keys - 1), max_size=2, unique=True))
            ukey_start.append(len(ukeys))
        pred_items: list[int] = []
        pred_start = [0]
        for _ in range(n_preds):
            pred_items += draw(st.lists(st.integers(0, n_items - 1), max_size=4))
            pred_start.append(len(pred_items))
        maybe_err = st.integers(-1, n_errs - 1) if n_errs else st.just(-1)
        uerr = [draw(st.sampled_from([-1, -1, -1, 0])) if n_errs else -1 for _ in range(n_classes)]
        pred_err = [draw(maybe_err) if draw(st.integers(0, 4)) == 0 else -1 for _ in range(n_preds)]
        key_map = [draw(st.integers(0, n_keys - 1)) for _ in range(n_local_keys)] if n_local_keys else []
        blocks.append(
            Block(
                item_off=item_off,
                pred_off=pred_off,
                err_off=err_off,
                item_class=item_class,
                class_start=class_start,
                class_codes=class_codes,
                ukey_start=ukey_start,
                ukeys=ukeys,
                pred_start=pred_start,
                pred_items=pred_items,
                uerr=uerr if any(e >= 0 for e in uerr) else None,
                pred_err=pred_err if any(e >= 0 for e in pred_err) else None,
                key_map=key_map if n_local_keys else None,
            )
        )
        item_off += n_items
        pred_off += n_preds
        err_off += n_errs
    n_items = item_off
    item = st.integers(0, n_items - 1)
    slot = None
    if draw(st.booleans()):
        slot = []
        for i in range(n_items):
            slot.append(draw(st.sampled_from(sorted({i, *slot}))))
    overrides = []
    override_of = [-1] * pred_off
    for p in range(pred_off):
        if draw(st.integers(0, 2)) == 0:
            override_of[p] = len(overrides)
            err = draw(st.integers(-1, err_off - 1)) if err_off and draw(st.integers(0, 5)) == 0 else -1
            overrides.append((draw(st.lists(item, max_size=4)), err))
    seeds = draw(st.lists(item, min_size=1, max_size=4, unique=True))
    n_front = draw(st.integers(0, len(seeds)))
    seed = st.sampled_from(seeds)
    head_start = [0]
    head_cons: list[int] = []
    head_items: list[int] = []
    for _ in range(draw(st.integers(0, 3))):
        head_cons += [MANDATORY, 0, 0]
        if draw(st.booleans()):
            head_cons += [PROHIBITED, 0, 0]
        else:
            members = draw(st.lists(seed, max_size=3))
            head_cons += [DEPENDENCY, len(head_items), len(members)]
            head_items += members
        head_start.append(len(head_cons) // 3)
    prefix: list[int] = []
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            prefix += [draw(seed), MANDATORY, 0]
        else:
            prefix += [draw(seed), 4, draw(seed)]
    return {
        "blocks": blocks,
        "n_items": n_items,
        "seeds": seeds,
        "n_front": n_front,
        "heads": Heads(head_start, head_cons, head_items),
        "prefix": prefix,
        "n_keys": n_keys,
        "slot": slot,
        "overrides": overrides,
        "override_of": override_of,
    }


def reference(p):
    """The expansion as Variable objects, straight from the docstring's rules, or the error."""
    blocks, slot = p["blocks"], p["slot"]

    def block_of(x):
        return next(b for b in reversed(blocks) if b.item_off <= x)

    def s(x):
        return slot[x] if slot is not None else x

    def class_of(x):
        b = block_of(x)
        return b, b.item_class[x - b.item_off]

    def members(b, code):
        k = p["override_of"][b.pred_off + code]
        if k >= 0:
            items, err = p["overrides"][k]
            return items, err
        err = b.pred_err[code] if b.pred_err is not None else -1
        items = [b.item_off + x for x in b.pred_items[b.pred_start[code] : b.pred_start[code + 1]]]
        return items, (b.err_off + err if err >= 0 else -1)

    owner: dict[int, int] = {}
    order: list[int] = []
    for x in p["seeds"]:
        if s(x) not in owner:
            owner[s(x)] = x
            order.append(x)
    queue = deque(order)
    done = set()
    while queue:
        x = queue.popleft()
        b, c = class_of(x)
        if (id(b), c) in done:
            continue
        done.add((id(b), c))
        for code in b.class_codes[b.class_start[c] : b.class_start[c + 1]]:
            if code < 0:
                if (-1 - code) & 1:
                    return b.err_off + ((-1 - code) >> 1)
                continue
            items, err = members(b, code)
            if err >= 0:
                return err
            for y in items:
                if s(y) not in owner:
                    owner[s(y)] = y
                    order.append(y)
                    queue.append(y)
    n_heads = p["heads"].n_heads
    var_items = order[: p["n_front"]] + [-1 - h for h in range(n_heads)] + order[p["n_front"] :]
    name = {}
    for x in order:
        name[s(x)] = f"i{s(x)}"
    groups: dict[int, list[str]] = {}
    for x in var_items:
        if x < 0:
            continue
        b, c = class_of(x)
        if b.uerr is not None and b.uerr[c] >= 0:
            return b.err_off + b.uerr[c]
        for key in b.ukeys[b.ukey_start[c] : b.ukey_start[c + 1]]:
            key = b.key_map[key] if b.key_map is not None else key
            groups.setdefault(key, []).append(name[s(x)])
    variables = []
    heads = p["heads"]
    for x in var_items:
        if x < 0:
            h = -1 - x
            cons = []
            for t in range(heads.start[h], heads.start[h + 1]):
                kind, start, length = heads.cons[3 * t : 3 * t + 3]
                if kind == MANDATORY:
                    cons.append(Mandatory())
                elif kind == PROHIBITED:
                    cons.append(Prohibited())
                else:
                    cons.append(Dependency(tuple(name[s(y)] for y in heads.items[start : start + length])))
            variables.append(Variable(f"h{h}", cons))
            continue
        cons = []
        for t in range(0, len(p["prefix"]), 3):
            item, kind, other = p["prefix"][t : t + 3]
            if s(item) == s(x):
                cons.append(Mandatory() if kind == MANDATORY else Conflict(name[s(other)]))
        b, c = class_of(x)
        for code in b.class_codes[b.class_start[c] : b.class_start[c + 1]]:
            if code < 0:
                cons.append(Prohibited())
            else:
                cons.append(Dependency(tuple(name[s(y)] for y in members(b, code)[0])))
        variables.append(Variable(name[s(x)], cons))
    for key, ids in groups.items():
        if len(ids) >= 2:
            variables.append(Variable(f"k{key}", (Mandatory(), AtMost(1, tuple(ids)))))
    return variables


def run(p):
    return expand(
        p["blocks"],
        n_items=p["n_items"],
        seeds=p["seeds"],
        n_front=p["n_front"],
        heads=p["heads"],
        prefix=p["prefix"],
        n_keys=p["n_keys"],
        slot=p["slot"],
        overrides=p["overrides"],
        override_of=p["override_of"],
    )


@SETTINGS
@given(template_problems())
def test_expansion_is_flatten_of_the_equivalent_variables(implementation, p):
    """The arrays equal flatten() of the variables the templates stand for, in the documented order."""

    expected = reference(p)
    exp = run(p)

    if isinstance(expected, int):
        assert expected == exp.error
        return
    assert -1 == exp.error
    flat = flatten(expected)
    assert flat.n_vars == exp.n_vars
    for name in ARRAYS:
        assert list(getattr(flat, name)) == list(getattr(exp, name)), name
    assert (flat.anchor_start, flat.n_anchors) == (exp.anchor_start, exp.n_anchors)


@pytest.mark.skipif("native" not in _encode.available(), reason="C accelerator not built")
@SETTINGS
@given(template_problems())
def test_native_and_pure_expansions_are_identical(p):
    """The C expansion and its pure twin give the same arrays, variables and errors."""

    results = []
    for name in ("native", "pure"):
        old = _encode.set_implementation(name)
        try:
            results.append(run(p))
        finally:
            _encode.set_implementation(old)
    native, pure = results

    assert (native.error, native.n_vars, native.anchor_start, native.n_anchors) == (
        pure.error,
        pure.n_vars,
        pure.anchor_start,
        pure.n_anchors,
    )
    for name in (*ARRAYS, "var_item", "group_keys"):
        assert getattr(native, name).tobytes() == getattr(pure, name).tobytes(), name


def test_solve_problem_on_an_expansion_matches_solve(implementation):
    """Solving expanded arrays chooses what solve() chooses for the equivalent variables."""

    block = Block(
        item_off=0,
        pred_off=0,
        err_off=0,
        item_class=[0, 1, 1, 2],
        class_start=[0, 1, 1, 2],
        class_codes=[0, -1],
        ukey_start=[0, 0, 1, 1],
        ukeys=[0],
        pred_start=[0, 2],
        pred_items=[1, 2],
    )
    p = {
        "blocks": [block],
        "n_items": 4,
        "seeds": [0],
        "n_front": 0,
        "heads": Heads([0, 2], [MANDATORY, 0, 0, DEPENDENCY, 0, 1], [0]),
        "prefix": [],
        "n_keys": 1,
        "slot": None,
        "overrides": [],
        "override_of": [-1],
    }
    variables = reference(p)
    exp = run(p)

    chosen = solve_problem(exp.problem(variables))

    assert [v.id for v in solve(variables)] == [variables[i].id for i in chosen]
    assert array("i", [-1, 0, 1, 2, -2]) == exp.var_item
    assert ["h0", "i0", "i1", "i2", "k0"] == [v.id for v in variables]

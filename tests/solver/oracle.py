"""Test oracles: brute force, constraint evaluation and a transliteration of upstream's search.

Everything here works on identifiers and Python sets, independent of the encoding, so it
checks the SAT layer from the outside.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterable, Sequence

from olmkit._solver import (
    And,
    AtMost,
    Conflict,
    Constraint,
    Dependency,
    Mandatory,
    Not,
    Or,
    Prohibited,
    Variable,
)


def holds(c: Constraint, subject: str, chosen: set[str]) -> bool:
    """Whether constraint ``c`` of ``subject`` holds when exactly ``chosen`` is installed."""
    if isinstance(c, Mandatory):
        return subject in chosen
    if isinstance(c, Prohibited):
        return subject not in chosen
    if isinstance(c, Dependency):
        return subject not in chosen or any(d in chosen for d in c.ids)
    if isinstance(c, Conflict):
        return not (subject in chosen and c.id in chosen)
    if isinstance(c, AtMost):
        return sum(1 for d in c.ids if d in chosen) <= c.n
    if isinstance(c, Or):
        return any(holds(x, subject, chosen) for x in c.constraints)
    if isinstance(c, And):
        return all(holds(x, subject, chosen) for x in c.constraints)
    if isinstance(c, Not):
        return not holds(c.constraint, subject, chosen)
    raise TypeError(c)


def satisfies(variables: Sequence[Variable], chosen: set[str]) -> bool:
    return all(holds(c, v.id, chosen) for v in variables for c in v.constraints)


def brute_force(
    variables: Sequence[Variable], applied: Iterable[tuple[str, Constraint]] | None = None
) -> set[str] | None:
    """Some set of identifiers satisfying the constraints (all of them, or ``applied``)."""
    ids = [v.id for v in variables]
    pairs = [(v.id, c) for v in variables for c in v.constraints] if applied is None else list(applied)
    for bits in itertools.product((False, True), repeat=len(ids)):
        chosen = {i for i, b in zip(ids, bits, strict=True) if b}
        if all(holds(c, s, chosen) for s, c in pairs):
            return chosen
    return None


def upstream_guesses(variables: Sequence[Variable]) -> list[str] | None:
    """The guesses upstream OLM's search (search.go) settles on, or None if unsatisfiable.

    Only for the basic constraint kinds without repeated identifiers in AtMost, where
    unit propagation of any arc-consistent encoding equals this domain propagation.
    "Test" is that propagation; "Solve" is brute force.
    """
    return _search(variables, None, shortest_prefix=False)


def prefix_guesses(
    variables: Sequence[Variable],
    solvable: Callable[[dict[str, bool]], bool] | None = None,
    counters: dict[str, int] | None = None,
) -> list[str] | None:
    """The guesses of olmkit's search: upstream's, except at an unsatisfiable leaf.

    There it backtracks straight to the newest guess of the shortest prefix of the
    guesses that cannot hold, putting the choices of the newer guesses back as they were
    when that guess was made: the same guesses as a greedy search that refutes every
    candidate that cannot hold together with the guesses before it. ``solvable`` decides whether a partial
    assignment extends to a solution (default: brute force). ``counters`` receives the
    numbers of guesses and backtracks, which follow the search step by step.
    """
    return _search(variables, solvable, shortest_prefix=True, counters=counters)


def _search(
    variables: Sequence[Variable],
    solvable_with: Callable[[dict[str, bool]], bool] | None,
    shortest_prefix: bool,
    counters: dict[str, int] | None = None,
) -> list[str] | None:
    ids = [v.id for v in variables]
    count = counters if counters is not None else {}
    count.update(guesses=0, backtracks=0)
    by_id = {v.id: v for v in variables}
    pairs = [(v.id, c) for v in variables for c in v.constraints]

    def propagate(assign: dict[str, bool]) -> dict[str, bool] | None:
        assign = dict(assign)
        changed = True
        while changed:
            changed = False
            for s, c in pairs:
                if isinstance(c, (Mandatory, Prohibited, Dependency, Conflict)):
                    if isinstance(c, Mandatory):
                        lits = [(s, True)]
                    elif isinstance(c, Prohibited):
                        lits = [(s, False)]
                    elif isinstance(c, Dependency):
                        lits = [(s, False)] + [(d, True) for d in c.ids]
                    else:
                        lits = [(s, False), (c.id, False)]
                    if any(assign.get(x) == val for x, val in lits):
                        continue
                    open_ = [(x, val) for x, val in lits if x not in assign]
                    if not open_:
                        return None
                    if len({x for x, _ in open_}) == 1 and len(set(open_)) == 1:
                        assign[open_[0][0]] = open_[0][1]
                        changed = True
                elif isinstance(c, AtMost):
                    count = sum(1 for d in c.ids if assign.get(d) is True)
                    if count > c.n:
                        return None
                    if count == c.n:
                        for d in c.ids:
                            if d not in assign:
                                assign[d] = False
                                changed = True
        return assign

    def solvable(assign: dict[str, bool]) -> bool:
        if solvable_with is not None:
            return solvable_with(assign)
        free = [i for i in ids if i not in assign]
        for bits in itertools.product((False, True), repeat=len(free)):
            chosen = {i for i, b in assign.items() if b} | {i for i, b in zip(free, bits, strict=True) if b}
            if satisfies(variables, chosen):
                return True
        return False

    base: dict[str, bool] = {}
    anchors = [v.id for v in variables if any(isinstance(c, Mandatory) for c in v.constraints)]
    state = propagate(base)
    if state is None:
        return None
    # scopes: stack of assignments, one per real guess
    scopes = [state]
    # choices: (candidates, index, orig); orig is the index the choice had when the guesses
    # it is decided under were made (a backjump puts it back there)
    queue: deque[tuple[tuple[str, ...], int, int]] = deque(((a,), 0, 0) for a in anchors)
    guesses: list[tuple[str | None, int, int, tuple[str, ...], int]] = []
    assumed: set[str] = set()
    result = 0
    backjump = -1
    while True:
        if not queue and result == 0:
            result = 1 if solvable(scopes[-1]) else -1
            if result == -1 and shortest_prefix:
                # the newest guess of the shortest prefix of the guesses that cannot hold
                real = [p for p, g in enumerate(guesses) if g[0] is not None]
                backjump = 0
                for n, p in enumerate(real if solvable({}) else []):
                    prefix = dict.fromkeys((guesses[q][0] for q in real[: n + 1]), True)
                    if not solvable(prefix):
                        backjump = p + 1
                        break
        if result == -1:
            if not guesses:
                return None
            count["backtracks"] += 1
            if backjump >= 0 and len(guesses) > backjump:
                _pop(guesses, assumed, scopes, queue)
                continue
            backjump = -1
            m, index, children, cands, orig = guesses.pop()
            if m is not None:
                assumed.discard(m)
                scopes.pop()
                result = 0
                index += 1
            for _ in range(children):
                queue.pop()
            queue.appendleft((cands, index, orig))
            continue
        if not queue:
            return [g[0] for g in guesses if g[0] is not None]
        cands, index, orig = queue.popleft()
        m = cands[index] if index < len(cands) else None
        if any(c in assumed for c in cands):
            m = None
        children = 0
        if m is not None:
            for c in by_id[m].constraints:
                if isinstance(c, Dependency) and c.ids:
                    queue.append((c.ids, 0, 0))
                    children += 1
            assumed.add(m)
            count["guesses"] += 1
            new = dict(scopes[-1])
            if new.get(m) is False:
                nxt = None
            else:
                new[m] = True
                nxt = propagate(new)
            scopes.append(nxt if nxt is not None else new)
            result = 0 if nxt is not None else -1
        guesses.append((m, index, children, cands, orig))


def _pop(
    guesses: list[tuple[str | None, int, int, tuple[str, ...], int]],
    assumed: set[str],
    scopes: list[dict[str, bool]],
    queue: deque[tuple[tuple[str, ...], int, int]],
) -> None:
    """Pop a guess newer than a backjump's target: its choice goes back as it was when the
    guesses it was decided under were made (as if the bad guess had been refuted at once)."""
    m, _, children, cands, orig = guesses.pop()
    if m is not None:
        assumed.discard(m)
        scopes.pop()
    for _ in range(children):
        queue.pop()
    queue.appendleft((cands, orig, orig))

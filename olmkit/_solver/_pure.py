"""Pure-Python twin of ``encode.c``: clause encoding and the preference search.

Every function and method here has the same signature and gives the same output as its
C counterpart in ``encode.c`` (wrapped by :mod:`olmkit._solver._native`): the clause
buffers are byte-identical, and the search makes the same guesses in the same order.
Keep the two in step; ``tests/solver`` compares them.

Problem layout (built by :mod:`olmkit._solver._problem`):

* SAT variables ``1..n_vars`` are the input variables, in input order; ``n_vars+1 ..
  n_vars+n_act`` are the activation literals of the top-level constraints, in order;
  auxiliary variables of the encoding follow, numbered in encoding order.
* ``nodes`` holds one record of five ints per constraint node: kind, subject variable,
  parameter (``n`` of AtMost), start and length of its operands in ``args``. Operands
  are SAT variables, except for Or/And/Not whose operands are node numbers.
* ``top`` lists the node numbers of the top-level constraints; ``top[j]`` is activated by
  variable ``n_vars + 1 + j``.

Clause buffers are ``array('i')`` of zero-terminated clauses, as accepted by
pycryptosat's ``Solver.add_clauses``.

Cardinality encoding: AtMost(n) is a sequential counter (Sinz 2005, "LTseq"): register
variables ``s(i, j)`` meaning "at least j+1 of the first i+1 operands are true", implied
upward by Horn clauses, and one activated clause per operand forbidding it to be the
(n+1)th. It is arc-consistent under unit propagation, like upstream's sorting network.
Inside Or/And/Not an AtMost needs both directions, so the counter there is a full
equivalence ``r(i, j) <-> r(i-1, j) or (x_i and r(i-1, j-1))``.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import Sequence
from typing import Any

__all__ = ["Searcher", "encode", "encode_counter", "expand"]

MANDATORY = 1
PROHIBITED = 2
DEPENDENCY = 3
CONFLICT = 4
ATMOST = 5
OR = 6
AND = 7
NOT = 8

UNKNOWN = 0
SAT = 1
UNSAT = -1

#: Backtracks the search for a model may spend when proving a leaf unsatisfiable.
PROOF_BUDGET = 1000


class _Encoder:
    __slots__ = ("args", "nodes", "out", "top_var", "true_var")

    def __init__(self, nodes: array[int], args: array[int], next_var: int) -> None:
        self.nodes = nodes
        self.args = args
        self.out = array("i")
        self.top_var = next_var - 1
        self.true_var = 0

    def new_var(self) -> int:
        self.top_var += 1
        return self.top_var

    def true(self) -> int:
        if not self.true_var:
            self.true_var = self.new_var()
            self.out.extend((self.true_var, 0))
        return self.true_var

    def clause(self, *lits: int) -> None:
        self.out.extend(lits)
        self.out.append(0)

    def atmost_top(self, act: int, xs: array[int], n: int) -> None:
        m = len(xs)
        if n >= m:
            return
        if n == 0:
            for x in xs:
                self.clause(-act, -x)
            return
        base = self.top_var + 1
        self.top_var += (m - 1) * n

        def s(i: int, j: int) -> int:
            return base + i * n + j

        for i in range(m - 1):
            x = xs[i]
            self.clause(-x, s(i, 0))
            if i > 0:
                for j in range(n):
                    self.clause(-s(i - 1, j), s(i, j))
                for j in range(1, n):
                    self.clause(-x, -s(i - 1, j - 1), s(i, j))
                self.clause(-act, -x, -s(i - 1, n - 1))
        self.clause(-act, -xs[m - 1], -s(m - 2, n - 1))

    def atmost_full(self, xs: array[int], n: int) -> int:
        m = len(xs)
        if n >= m:
            return self.true()
        t = self.true()
        width = n + 1
        base = self.top_var + 1
        self.top_var += m * width
        for i in range(m):
            x = xs[i]
            for j in range(width):
                r = base + i * width + j
                a = base + (i - 1) * width + j if i > 0 else -t
                if j == 0:
                    c = t
                elif i > 0:
                    c = base + (i - 1) * width + j - 1
                else:
                    c = -t
                self.clause(-a, r)
                self.clause(-x, -c, r)
                self.clause(-r, a, x)
                self.clause(-r, a, c)
        return -(base + (m - 1) * width + n)

    def literal(self, node: int) -> int:
        """Return a literal equivalent to ``node``, adding its definition (Tseitin)."""
        nodes = self.nodes
        args = self.args
        o = 5 * node
        kind = nodes[o]
        x = nodes[o + 1]
        start = nodes[o + 3]
        ops = args[start : start + nodes[o + 4]]
        if kind == MANDATORY:
            return x
        if kind == PROHIBITED:
            return -x
        if kind == DEPENDENCY:
            if not ops:
                return -x
            g = self.new_var()
            self.clause(-g, -x, *ops)
            self.clause(g, x)
            for d in ops:
                self.clause(g, -d)
            return g
        if kind == CONFLICT:
            y = ops[0]
            g = self.new_var()
            self.clause(-g, -x, -y)
            self.clause(g, x)
            self.clause(g, y)
            return g
        if kind == ATMOST:
            return self.atmost_full(ops, nodes[o + 2])
        if kind == NOT:
            return -self.literal(ops[0])
        lits = [self.literal(child) for child in ops]
        if kind == OR:
            if not lits:
                return -self.true()
            g = self.new_var()
            self.clause(-g, *lits)
            for lit in lits:
                self.clause(g, -lit)
            return g
        # AND
        if not lits:
            return self.true()
        g = self.new_var()
        self.clause(g, *[-lit for lit in lits])
        for lit in lits:
            self.clause(-g, lit)
        return g


def encode(n_vars: int, nodes: array[int], args: array[int], top: array[int]) -> tuple[array[int], int]:
    """Encode the top-level constraints ``top`` as clauses with activation literals.

    Args:
        n_vars: number of input variables (SAT variables ``1..n_vars``).
        nodes: constraint node records (five ints each, see the module docstring).
        args: node operands.
        top: node numbers of the top-level constraints, activated by ``n_vars+1+j``.

    Returns:
        The zero-terminated clause buffer and the highest SAT variable used.
    """
    n_act = len(top)
    enc = _Encoder(nodes, args, n_vars + n_act + 1)
    clause = enc.clause
    for j in range(n_act):
        act = n_vars + 1 + j
        o = 5 * top[j]
        kind = nodes[o]
        x = nodes[o + 1]
        start = nodes[o + 3]
        ops = args[start : start + nodes[o + 4]]
        if kind == MANDATORY:
            clause(-act, x)
        elif kind == PROHIBITED:
            clause(-act, -x)
        elif kind == DEPENDENCY:
            clause(-act, -x, *ops)
        elif kind == CONFLICT:
            clause(-act, -x, -ops[0])
        elif kind == ATMOST:
            enc.atmost_top(act, ops, nodes[o + 2])
        else:
            clause(-act, enc.literal(top[j]))
    return enc.out, enc.top_var


def encode_counter(first_var: int, lits: array[int]) -> tuple[array[int], array[int], int]:
    """Encode a counter over ``lits`` whose outputs bound how many of them are true.

    Args:
        first_var: first free SAT variable.
        lits: the counted literals (k of them).

    Returns:
        The clause buffer, ``outs`` where assuming ``outs[w]`` allows at most ``w`` of
        ``lits`` (``w = 0..k-1``), and the highest SAT variable used.
    """
    k = len(lits)
    out = array("i")
    base = first_var

    def s(i: int, j: int) -> int:
        return base + i * k + j

    for i in range(k):
        x = lits[i]
        out.extend((-x, s(i, 0), 0))
        if i > 0:
            for j in range(k):
                out.extend((-s(i - 1, j), s(i, j), 0))
            for j in range(1, k):
                out.extend((-x, -s(i - 1, j - 1), s(i, j), 0))
    outs = array("i", [-s(k - 1, w) for w in range(k)])
    return out, outs, first_var + k * k - 1


class Searcher:
    """Greedy preference search with a watched-literal unit propagator.

    The search is upstream OLM's (``solver/search.go``): a FIFO deque of choices, one per
    anchor first; the front choice is satisfied if one of its candidates is already
    guessed, else its next untried candidate is guessed, the guess's Dependency
    constraints are queued at the back and unit propagation runs. A conflict undoes the
    most recent guess and tries its next candidate; an exhausted choice is skipped. When
    the deque is empty a model is needed: the searcher first tries to complete the
    assignment by setting the remaining variables false in order (with propagation);
    if that fails it stops and :meth:`run` returns 0 so that the caller asks a SAT
    solver, under :meth:`assumptions`, and reports back with :meth:`resume`.

    Args:
        n_vars: number of input variables.
        n_total: highest SAT variable in ``clauses``.
        clauses: the clause buffer from :func:`encode`.
        n_act: number of activation literals (assumed true throughout).
        nodes: constraint nodes, for the candidates of Dependency choices.
        args: node operands, followed by the anchors.
        anchor_start: where the anchors start in ``args``.
        n_anchors: how many anchors there are.
        vdep_start: ``n_vars + 1`` offsets into ``vdep``, per input variable.
        vdep: node numbers of each variable's non-empty top-level Dependency constraints.
        proofs: when a completion fails, first try to show by propagation that the guesses
            cannot all hold (see :meth:`_prove`), and ask the SAT solver only if that fails.

    When the completion fails, the leaf is often unsatisfiable because some choice ran out
    of candidates. The searcher then checks, under the guesses made before that choice,
    that every candidate is false or fails by propagation; the implication graph gives
    the newest guess involved, and a bounded depth-first search for a model of the
    guesses before that one shows it is the newest guess of the shortest unsatisfiable
    prefix of the guesses. The search then backtracks straight there, as it does to the
    newest guess of a SAT solver's conflict; when any step fails the SAT solver decides.
    """

    #: Whether :meth:`check` with ``complete=True`` is cheap enough to try before the
    #: backend when minimising conflicts (it only saves time; answers are the same).
    cheap_completion = False

    def __init__(
        self,
        n_vars: int,
        n_total: int,
        clauses: array[int],
        n_act: int,
        nodes: array[int],
        args: array[int],
        anchor_start: int,
        n_anchors: int,
        vdep_start: array[int],
        vdep: array[int],
        proofs: bool = True,
    ) -> None:
        self.n_vars = n_vars
        self.n_total = n_total
        self.proofs = proofs
        self.n_act = n_act
        self.nodes = nodes
        self.args = args
        self.vdep_start = vdep_start
        self.vdep = vdep
        # val: 0 unassigned, 1 true, 2 false
        self.val = bytearray(n_total + 1)
        self.trail: list[int] = []
        self.trail_lim: list[int] = []
        self.qhead = 0
        self.watches: list[list[int]] = [[] for _ in range(2 * n_total + 2)]
        self.lits: list[int] = []
        self.cstart: list[int] = []
        self.clen: list[int] = []
        self.assumed = bytearray(n_vars + 1)
        # per variable: the clause that implied it (-1 decision, -2 root) and its level
        self.reason = [0] * (n_total + 1)
        self.level = [0] * (n_total + 1)
        self.conflict = -1
        # choices: (start, length, index, owner); guesses add children and the level below
        self.queue: deque[tuple[int, int, int, int]] = deque()
        self.guesses: list[tuple[int, int, int, int, int, int, int]] = []
        self.result = UNKNOWN
        self.backjump = -1
        self.ask_level = -1
        self.shorten_from = 0
        self.awaiting = False
        self.done = 0
        self.root_unsat = False
        self.units_unsat = False
        self.empty_clause = False
        self.units_end = 0
        self._model = bytes(n_vars)
        self.n_guesses = 0
        self.n_backtracks = 0
        self.n_propagations = 0
        self.n_solver_calls = 0
        self.n_proofs = 0
        self._load(clauses)
        for i in range(n_anchors):
            self.queue.append((anchor_start + i, 1, 0, 0))

    # -- propagation -----------------------------------------------------------

    def _load(self, clauses: array[int]) -> None:
        stamp = [0] * (self.n_total + 1)
        sign = bytearray(self.n_total + 1)
        lits = self.lits
        watches = self.watches
        units: list[int] = []
        cid = 0
        clause: list[int] = []
        taut = False
        for lit in clauses:
            if lit:
                v = lit if lit > 0 else -lit
                neg = 1 if lit < 0 else 0
                if stamp[v] == cid + 1:
                    if sign[v] != neg:
                        taut = True
                    continue
                stamp[v] = cid + 1
                sign[v] = neg
                clause.append(lit)
                continue
            if not taut:
                if not clause:
                    self.root_unsat = True
                    self.empty_clause = True
                elif len(clause) == 1:
                    units.append(clause[0])
                else:
                    c = len(self.cstart)
                    self.cstart.append(len(lits))
                    self.clen.append(len(clause))
                    lits.extend(clause)
                    watches[_idx(clause[0])].append(c)
                    watches[_idx(clause[1])].append(c)
            cid += 1
            clause = []
            taut = False
        for lit in units:
            if not self._enqueue(lit, -2):
                self.units_unsat = True
        self.root_unsat = self.root_unsat or self.units_unsat
        self.units_end = len(self.trail)
        for v in range(self.n_vars + 1, self.n_vars + self.n_act + 1):
            if not self._enqueue(v, -2):
                self.root_unsat = True
        if not self.root_unsat and not self._propagate():
            self.root_unsat = True

    def _value(self, lit: int) -> int:
        """1 true, 2 false, 0 unassigned."""
        if lit > 0:
            return self.val[lit]
        x = self.val[-lit]
        return (3 - x) if x else 0

    def _enqueue(self, lit: int, reason: int = -1) -> bool:
        value = self._value(lit)
        if value == 1:
            return True
        if value == 2:
            return False
        v = lit if lit > 0 else -lit
        self.val[v] = 1 if lit > 0 else 2
        self.reason[v] = reason
        self.level[v] = len(self.trail_lim)
        self.trail.append(lit)
        self.n_propagations += 1
        return True

    def _propagate(self) -> bool:
        val = self.val
        lits = self.lits
        cstart = self.cstart
        clen = self.clen
        watches = self.watches
        trail = self.trail
        while self.qhead < len(trail):
            p = trail[self.qhead]
            self.qhead += 1
            fl = -p
            ws = watches[_idx(fl)]
            i = j = 0
            n = len(ws)
            while i < n:
                c = ws[i]
                i += 1
                s = cstart[c]
                if lits[s] == fl:
                    lits[s] = lits[s + 1]
                    lits[s + 1] = fl
                first = lits[s]
                fv = val[first] if first > 0 else (3 - val[-first] if val[-first] else 0)
                if fv == 1:
                    ws[j] = c
                    j += 1
                    continue
                for k in range(s + 2, s + clen[c]):
                    lit = lits[k]
                    lv = val[lit] if lit > 0 else (3 - val[-lit] if val[-lit] else 0)
                    if lv != 2:
                        lits[s + 1] = lit
                        lits[k] = fl
                        watches[_idx(lit)].append(c)
                        break
                else:
                    ws[j] = c
                    j += 1
                    if fv == 2:
                        while i < n:
                            ws[j] = ws[i]
                            j += 1
                            i += 1
                        del ws[j:]
                        self.qhead = len(trail)
                        self.conflict = c
                        return False
                    self._enqueue(first, c)
            del ws[j:]
        return True

    def _new_level(self) -> None:
        self.trail_lim.append(len(self.trail))

    def _undo_level(self) -> None:
        mark = self.trail_lim.pop()
        val = self.val
        trail = self.trail
        for lit in trail[mark:]:
            val[lit if lit > 0 else -lit] = 0
        del trail[mark:]
        self.qhead = mark

    def _assume(self, lit: int) -> bool:
        return self._enqueue(lit) and self._propagate()

    # -- search ----------------------------------------------------------------

    def _push_guess(self) -> None:
        start, length, index, owner = self.queue.popleft()
        args = self.args
        m = args[start + index] if index < length else 0
        for t in range(start, start + length):
            if self.assumed[args[t]]:
                m = 0
                break
        children = 0
        lvl = len(self.trail_lim)
        if m:
            nodes = self.nodes
            for t in range(self.vdep_start[m - 1], self.vdep_start[m]):
                o = 5 * self.vdep[t]
                self.queue.append((nodes[o + 3], nodes[o + 4], 0, m))
                children += 1
            self.assumed[m] = 1
            self.n_guesses += 1
            self._new_level()
            self.result = UNKNOWN if self._assume(m) else UNSAT
        self.guesses.append((m, index, children, start, length, owner, lvl))

    def _pop_guess(self) -> None:
        m, index, children, start, length, owner, lvl = self.guesses.pop()
        self.n_backtracks += 1
        if m:
            self.assumed[m] = 0
            while len(self.trail_lim) > lvl:  # _prove() may have undone it already
                self._undo_level()
            self.result = UNKNOWN
            index += 1
        for _ in range(children):
            self.queue.pop()
        self.queue.appendleft((start, length, index, owner))

    def _complete(self) -> bool:
        """Try to extend the assignment to a model, every open variable false in order."""
        self._new_level()
        val = self.val
        for v in range(1, self.n_total + 1):
            if not val[v] and not self._assume(-v):
                self._undo_level()
                return False
        self._model = bytes(1 if val[v] == 1 else 0 for v in range(1, self.n_vars + 1))
        return True

    def _completes(self, budget: int) -> bool:
        """Whether the assignment extends to a model (a bounded depth-first search).

        Open variables in order, false first, chronological backtracking, at most
        ``budget`` backtracks. Only ever a proof of satisfiability; the assignment is
        left as it was.
        """
        base = len(self.trail_lim)
        val = self.val
        dec: list[int] = []
        v = 1
        found = False
        while True:
            while v <= self.n_total and val[v]:
                v += 1
            if v > self.n_total:
                found = True
                break
            self._new_level()
            if self._assume(-v):
                dec.append(-v)
                continue
            self._undo_level()
            self._new_level()
            if self._assume(v):
                dec.append(v)
                continue
            self._undo_level()
            resumed = False
            while len(self.trail_lim) > base:
                if budget <= 0:
                    break
                budget -= 1
                d = dec.pop()
                self._undo_level()
                if d < 0:
                    self._new_level()
                    if self._assume(-d):
                        dec.append(-d)
                        v = -d + 1
                        resumed = True
                        break
                    self._undo_level()
            if not resumed:
                break
        while len(self.trail_lim) > base:
            self._undo_level()
        return found

    def _newest_decision(self, marked: list[int], level_skip: int) -> int:
        """The highest level of a decision the marked variables follow from (0 if none)."""
        seen = set(marked)
        pending = len(marked)
        top = 0
        reason = self.reason
        level = self.level
        lits = self.lits
        trail = self.trail
        for i in range(len(trail) - 1, -1, -1):
            if pending <= 0:
                break
            v = trail[i] if trail[i] > 0 else -trail[i]
            if v not in seen:
                continue
            pending -= 1
            r = reason[v]
            if r == -1:
                if level[v] != level_skip and level[v] > top:
                    top = level[v]
            elif r >= 0:
                s = self.cstart[r]
                for k in range(s, s + self.clen[r]):
                    u = lits[k] if lits[k] > 0 else -lits[k]
                    if u != v and level[u] > 0 and u not in seen:
                        seen.add(u)
                        pending += 1
        return top

    def _levels_to(self, k: int) -> None:
        """The assignment at the first ``k`` guesses' levels (assuming undone ones again)."""
        while len(self.trail_lim) > k:
            self._undo_level()
        for g in self.guesses:
            if len(self.trail_lim) >= k:
                break
            if g[0] and g[6] == len(self.trail_lim):
                self._new_level()
                self._assume(g[0])

    def _level_positions(self) -> list[int]:
        """Level -> position in the guess stack of the real guesses (level k: the k-th)."""
        out = [0]
        for p, g in enumerate(self.guesses):
            if g[0]:
                out.append(p)
        return out

    def _real_guesses(self) -> int:
        return sum(1 for g in self.guesses if g[0])

    def _prove(self) -> int:
        """After a failed completion, show by propagation that the guesses cannot all hold.

        Through the earliest choice that ran out of candidates: under the guesses before
        it, every candidate must be false or fail by propagation. Returns the level of the
        newest guess the proof needs, or -1 (the assignment as it was) without a proof.
        """
        args = self.args
        for p, g in enumerate(self.guesses):
            m, index, _, start, length, owner, _ = g
            if m or index < length:
                continue
            if any(self.assumed[args[t]] for t in range(start, start + length)):
                continue
            before = sum(1 for q in range(p) if self.guesses[q][0])
            self._levels_to(before)
            top = self.level[owner] if owner else 0
            ok = True
            for t in range(start, start + length):
                c = args[t]
                value = self._value(c)
                if value == 1:
                    ok = False
                elif value == 2:
                    top = max(top, self._newest_decision([c] if self.level[c] > 0 else [], -1))
                else:
                    self._new_level()
                    if self._assume(c):
                        ok = False
                    else:
                        s = self.cstart[self.conflict]
                        marked: list[int] = []
                        for k in range(s, s + self.clen[self.conflict]):
                            u = self.lits[k] if self.lits[k] > 0 else -self.lits[k]
                            if self.level[u] > 0 and u not in marked:
                                marked.append(u)
                        top = max(top, self._newest_decision(marked, len(self.trail_lim)))
                    self._undo_level()
                if not ok:
                    break
            if ok:
                self.n_proofs += 1
                return top
            break  # one attempt: the earliest such choice
        self._levels_to(self._real_guesses())
        return -1

    def _shorten(self, top: int) -> bool:
        """The guesses up to level ``top`` cannot all hold: find the shortest such prefix.

        Its newest guess is where the search backtracks to. Completion of the guesses
        before level ``top`` shows it is ``top``; otherwise the SAT solver is asked about
        them. Returns True when the backjump is set, False when a question is pending.
        """
        self.result = UNSAT
        if top <= 0:
            self.backjump = 0
            return True
        self._levels_to(top - 1)
        if self._completes(PROOF_BUDGET):
            self.backjump = self._level_positions()[top] + 1
            return True
        self.ask_level = top - 1
        self.awaiting = True
        self.n_solver_calls += 1
        return False

    def run(self) -> int:
        """Search on; 1 = satisfiable, -1 = unsatisfiable, 0 = a SAT solver is needed."""
        if self.root_unsat:
            return UNSAT
        if self.done or self.awaiting:
            return self.done
        while True:
            if self.shorten_from > 0:
                top = self.shorten_from
                self.shorten_from = 0
                if not self._shorten(top):
                    return 0
                continue
            if not self.queue and self.result == UNKNOWN:
                if self._complete():
                    self.result = SAT
                else:
                    top = self._prove() if self.proofs else -1
                    if top >= 0:
                        if not self._shorten(top):
                            return 0
                        continue
                    self.ask_level = -1
                    self.awaiting = True
                    self.n_solver_calls += 1
                    return 0
            if self.result == UNSAT:
                if not self.guesses:
                    self.done = UNSAT
                    return UNSAT
                if self.backjump >= 0 and len(self.guesses) > self.backjump:
                    self._pop_guess()
                    self.result = UNSAT
                    continue
                self.backjump = -1
                self._pop_guess()
                continue
            if not self.queue:
                self.done = SAT
                return SAT
            self._push_guess()

    def assumptions(self) -> array[int]:
        """The guessed literals, oldest first (the activation literals are not included).

        While a question about a prefix of the guesses is pending, only that prefix.
        """
        guessed = [g[0] for g in self.guesses if g[0]]
        if self.awaiting and self.ask_level >= 0:
            guessed = guessed[: self.ask_level]
        return array("i", guessed)

    def resume(self, sat: bool, model: bytes | None, core: array[int] | None) -> None:
        """Report the SAT solver's answer to the question :meth:`run` asked.

        Args:
            sat: whether the formula is satisfiable under :meth:`assumptions`.
            model: when ``sat``, one byte (0/1) per input variable.
            core: when not ``sat``, failed assumptions (may be ``None``).

        An unsatisfiable answer starts the search for the shortest prefix of the guesses
        that cannot hold (from the newest guess among ``core``, else one guess shorter at
        a time); its newest guess is where the search backtracks to. A satisfiable answer
        about all the guesses gives the model; about a prefix, it ends that search.
        """
        if not self.awaiting:
            raise RuntimeError("resume() without a pending question")
        self.awaiting = False
        asked = self.ask_level
        self.ask_level = -1
        if sat and asked < 0:
            assert model is not None
            self._model = bytes(model[: self.n_vars])
            self.result = SAT
            return
        self.result = UNSAT
        if sat:
            self.backjump = self._level_positions()[asked + 1] + 1
            return
        if core is None:
            self.shorten_from = asked if asked >= 0 else self._real_guesses()
            if self.shorten_from == 0:
                self.backjump = 0
            return
        wanted = {lit for lit in core if 0 < lit <= self.n_total}
        top = 0
        level = 0
        for g in self.guesses:
            if not g[0]:
                continue
            level += 1
            if g[0] in wanted and (asked < 0 or level <= asked):
                top = level
        if top == 0:
            self.backjump = 0
        else:
            self.shorten_from = top

    def model(self) -> bytes:
        """One byte (0/1) per input variable: the model found by the search."""
        return self._model

    def forced_extras(self) -> bool:
        """Whether guesses and model-false variables force every other model-true variable.

        When they do, no cardinality minimisation can drop any of them.
        """
        while self.trail_lim:
            self._undo_level()
        if self.root_unsat:
            return False
        self._new_level()
        model = self._model
        for p in range(self.n_vars):
            v = p + 1
            if self.assumed[v]:
                if not self._enqueue(v):
                    return False
            elif not model[p] and not self._enqueue(-v):
                return False
        if not self._propagate():
            return False
        val = self.val
        return all(val[p + 1] == 1 for p in range(self.n_vars) if model[p])

    def check(self, lits: array[int], complete: bool) -> int:
        """Decide ``lits`` (activation literals, typically) cheaply, if possible.

        Returns -1 when unit propagation refutes them, 1 when ``complete`` is true and
        setting the open variables false in order (with propagation) gives a model, and
        0 otherwise. Only for after the search: it discards the search state.
        """
        if self.units_unsat or self.empty_clause:
            return -1
        self.trail_lim.clear()
        val = self.val
        trail = self.trail
        for lit in trail[self.units_end :]:
            val[lit if lit > 0 else -lit] = 0
        del trail[self.units_end :]
        self.qhead = 0
        for lit in lits:
            if not self._enqueue(lit):
                return -1
        if not self._propagate():
            return -1
        if not complete:
            return 0
        for v in range(1, self.n_total + 1):
            if not val[v] and not self._assume(-v):
                return 0
        return 1

    def stats(self) -> dict[str, int]:
        """Counters of the search so far."""
        return {
            "guesses": self.n_guesses,
            "backtracks": self.n_backtracks,
            "propagations": self.n_propagations,
            "solver_calls": self.n_solver_calls,
            "proofs": self.n_proofs,
        }


def _idx(lit: int) -> int:
    return 2 * lit if lit > 0 else -2 * lit + 1


# --------------------------------------------------------------------------- expansion


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

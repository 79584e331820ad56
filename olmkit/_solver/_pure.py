"""Pure-Python twin of ``encode.c``: clause encoding, the preference search, template expansion.

Every function and method of the twin has the same signature and gives the same output as its
C counterpart in ``encode.c`` (wrapped by :mod:`olmkit._solver._native`): the clause buffers
are byte-identical, and the search makes the same guesses in the same order. Keep the two in
step; ``tests/solver`` compares them. The twin is three modules, one job each: the encoding
(:mod:`olmkit._solver._pure_encode`), the search (:class:`Searcher`, here) and the template
expansion (:mod:`olmkit._solver._pure_expand`); this module is the face the rest imports.
"""

from __future__ import annotations

from array import array
from collections import deque

from olmkit._solver._pure_classes import lay_out
from olmkit._solver._pure_encode import (
    AND,
    ATMOST,
    CONFLICT,
    DEPENDENCY,
    MANDATORY,
    NOT,
    OR,
    PROHIBITED,
    encode,
    encode_counter,
)
from olmkit._solver._pure_expand import expand
from olmkit._solver._pure_group import ascending, group, scatter, take, within
from olmkit._solver._pure_select import select

__all__ = [
    "AND",
    "ATMOST",
    "CONFLICT",
    "DEPENDENCY",
    "MANDATORY",
    "NOT",
    "OR",
    "PROHIBITED",
    "Searcher",
    "ascending",
    "encode",
    "encode_counter",
    "expand",
    "group",
    "lay_out",
    "scatter",
    "select",
    "take",
    "within",
]

UNKNOWN = 0
SAT = 1
UNSAT = -1

#: Backtracks the search for a model may spend when proving a leaf unsatisfiable.
PROOF_BUDGET = 1000


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
        consume: the searcher may take ``clauses``' storage for its own (the C twin does:
            no copy of the buffer); its content is undefined afterwards.

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
    #: ``consume`` is accepted, and the buffer left as it was (its clauses are copied).
    consumes = False

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
        consume: bool = False,
    ) -> None:
        del consume  # the clauses are copied into lists here: the buffer stays as it was
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
        # choices: (start, length, index, owner, orig), orig: the index the choice had when
        # the guesses it was decided under were made; guesses add children and the level below
        self.queue: deque[tuple[int, int, int, int, int]] = deque()
        self.guesses: list[tuple[int, int, int, int, int, int, int, int]] = []
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
            self.queue.append((anchor_start + i, 1, 0, 0, 0))

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
        self.n_input = cid
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
        start, length, index, owner, orig = self.queue.popleft()
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
                self.queue.append((nodes[o + 3], nodes[o + 4], 0, m, 0))
                children += 1
            self.assumed[m] = 1
            self.n_guesses += 1
            self._new_level()
            self.result = UNKNOWN if self._assume(m) else UNSAT
        self.guesses.append((m, index, children, start, length, owner, lvl, orig))

    def _pop_guess(self, restore: bool = False) -> None:
        """Undo the newest guess; its choice goes back to the front of the deque.

        Normally the choice moves on to its next candidate. ``restore`` (a guess newer than
        the one a backjump goes to) puts the choice back as it was when the guesses it was
        decided under were made: its candidates were refuted under guesses that no longer
        stand, so the search is the same as if the bad guess had been refuted at once.
        """
        m, index, children, start, length, owner, lvl, orig = self.guesses.pop()
        self.n_backtracks += 1
        if m:
            self.assumed[m] = 0
            while len(self.trail_lim) > lvl:  # _prove() may have undone it already
                self._undo_level()
            self.result = UNKNOWN
            index += 1
        if restore:
            index = orig
        for _ in range(children):
            self.queue.pop()
        self.queue.appendleft((start, length, index, owner, orig))

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
            m, index, _, start, length, owner, _, _ = g
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
                    self._pop_guess(restore=True)
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
            "clauses": self.n_input,
        }


def _idx(lit: int) -> int:
    return 2 * lit if lit > 0 else -2 * lit + 1

"""Pure-Python twin of ``encode.c``, part one: constraint nodes to clauses.

Same signatures and byte-identical output as the C functions (see :mod:`olmkit._solver._pure`).

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

__all__ = [
    "AND",
    "ATMOST",
    "CONFLICT",
    "DEPENDENCY",
    "MANDATORY",
    "NOT",
    "OR",
    "PROHIBITED",
    "encode",
    "encode_counter",
]

MANDATORY = 1
PROHIBITED = 2
DEPENDENCY = 3
CONFLICT = 4
ATMOST = 5
OR = 6
AND = 7
NOT = 8


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

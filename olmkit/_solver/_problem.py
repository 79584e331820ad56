"""Flatten variables and constraints into the int arrays the hot path works on.

This is the only per-constraint Python loop of a solve; everything after it works on
``array('i')`` buffers (see :mod:`olmkit._solver._pure` for the layout).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import attrs

from olmkit._solver._pure import AND, ATMOST, CONFLICT, DEPENDENCY, MANDATORY, NOT, OR, PROHIBITED
from olmkit._solver.constraints import (
    And,
    AppliedConstraint,
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
from olmkit._solver.errors import DuplicateIdentifier, InvalidInput

__all__ = ["Problem", "flatten"]


@attrs.define
class Problem:
    """A solver input as int arrays.

    SAT variable ``i + 1`` is ``variables[i]``; activation literal ``n_vars + 1 + j`` is
    top-level constraint ``j``, which is constraint ``top_index[j]`` of variable
    ``top_owner[j]`` (0-based).
    """

    variables: Sequence[Variable]
    n_vars: int
    nodes: array[int]
    args: array[int]
    top: array[int]
    top_owner: array[int]
    top_index: array[int]
    anchor_start: int
    n_anchors: int
    vdep_start: array[int]
    vdep: array[int]

    @property
    def n_act(self) -> int:
        return len(self.top)

    def activation(self, j: int) -> int:
        return self.n_vars + 1 + j

    def applied(self, lit: int) -> AppliedConstraint | None:
        """The applied constraint an activation literal stands for, if ``lit`` is one."""
        j = lit - self.n_vars - 1
        if not 0 <= j < len(self.top):
            return None
        variable = self.variables[self.top_owner[j]]
        return AppliedConstraint(variable.id, variable.constraints[self.top_index[j]])


def flatten(variables: Sequence[Variable]) -> Problem:
    """Number the variables and lay their constraints out as arrays.

    Raises:
        DuplicateIdentifier: two variables share an identifier.
        InvalidInput: constraints reference unknown identifiers, have a negative bound
            or are not constraints at all.
    """
    index: dict[str, int] = {}
    for i, variable in enumerate(variables):
        if variable.id in index:
            raise DuplicateIdentifier(identifier=variable.id)
        index[variable.id] = i + 1

    nodes = array("i")
    args = array("i")
    top = array("i")
    top_owner = array("i")
    top_index = array("i")
    anchors = array("i")
    vdep_start = array("i", [0])
    vdep = array("i")
    problems: list[str] = []
    get = index.get

    def lookup(subject: str, ident: str) -> int:
        v = get(ident)
        if v is None:
            problems.append(f'variable "{ident}" referenced but not provided')
            return 0
        return v

    def add_node(subject: str, x: int, c: Constraint) -> int:
        node = len(nodes) // 5
        cls = type(c)
        if cls is Dependency:
            start = len(args)
            ids = c.ids  # type: ignore[union-attr]
            vs = [get(d) for d in ids]
            if None in vs:
                vs = [lookup(subject, d) for d in ids]
            args.extend(vs)  # type: ignore[arg-type]
            nodes.extend((DEPENDENCY, x, 0, start, len(ids)))
        elif cls is Mandatory:
            nodes.extend((MANDATORY, x, 0, 0, 0))
        elif cls is Prohibited:
            nodes.extend((PROHIBITED, x, 0, 0, 0))
        elif cls is Conflict:
            nodes.extend((CONFLICT, x, 0, len(args), 1))
            args.append(lookup(subject, c.id))  # type: ignore[union-attr]
        elif cls is AtMost:
            n = c.n  # type: ignore[union-attr]
            if not isinstance(n, int) or n < 0:
                problems.append(f'variable "{subject}" permits at most {n!r}: n must be >= 0')
                n = 0
            start = len(args)
            ids = c.ids  # type: ignore[union-attr]
            args.extend(lookup(subject, d) for d in ids)
            nodes.extend((ATMOST, x, n, start, len(ids)))
        elif cls is Not:
            # reserve the node, then fill in its single operand
            nodes.extend((NOT, x, 0, 0, 1))
            child = add_node(subject, x, c.constraint)  # type: ignore[union-attr]
            nodes[5 * node + 3] = len(args)
            args.append(child)
        elif cls is Or or cls is And:
            nodes.extend((OR if cls is Or else AND, x, 0, 0, 0))
            operands = c.constraints  # type: ignore[union-attr]
            children = [add_node(subject, x, child) for child in operands]
            nodes[5 * node + 3] = len(args)
            nodes[5 * node + 4] = len(children)
            args.extend(children)
        else:
            problems.append(f'variable "{subject}" has an unknown constraint {c!r}')
            nodes.extend((AND, x, 0, 0, 0))
        return node

    getitem = index.__getitem__
    nodes_extend = nodes.extend
    args_extend = args.extend
    top_append = top.append
    owner_append = top_owner.append
    kidx_append = top_index.append
    vdep_append = vdep.append
    vdep_start_append = vdep_start.append
    n_nodes = 0
    for i, variable in enumerate(variables):
        x = i + 1
        anchor = False
        for k, c in enumerate(variable.constraints):
            cls = type(c)
            # The common kinds inline; combinators and bad input through add_node.
            if cls is Dependency:
                ids = c.ids  # type: ignore[union-attr]
                try:
                    vs = list(map(getitem, ids))
                except KeyError:
                    vs = [lookup(variable.id, d) for d in ids]
                nodes_extend((DEPENDENCY, x, 0, len(args), len(vs)))
                args_extend(vs)
                if vs:
                    vdep_append(n_nodes)
                node = n_nodes
            elif cls is Mandatory:
                nodes_extend((MANDATORY, x, 0, 0, 0))
                anchor = True
                node = n_nodes
            else:
                node = add_node(variable.id, x, c)
            n_nodes = len(nodes) // 5
            top_append(node)
            owner_append(i)
            kidx_append(k)
        if anchor:
            anchors.append(x)
        vdep_start_append(len(vdep))

    if problems:
        raise InvalidInput(problems=problems)

    anchor_start = len(args)
    args.extend(anchors)
    return Problem(
        variables=variables,
        n_vars=len(variables),
        nodes=nodes,
        args=args,
        top=top,
        top_owner=top_owner,
        top_index=top_index,
        anchor_start=anchor_start,
        n_anchors=len(anchors),
        vdep_start=vdep_start,
        vdep=vdep,
    )

"""Property tests: versions and ranges follow blang/semver v4's documented rules.

The rules (blang's ``ParseRange`` documentation): a condition is an operator and a version
(``<``, ``<=``, ``>``, ``>=``; ``1.0.0``, ``=1.0.0``, ``==1.0.0`` for equality; ``!1.0.0``,
``!=1.0.0`` for inequality; spaces between an operator and its version are tolerated);
conditions separated by spaces are ANDed; ``||`` separates OR alternatives and AND binds
tighter; versions compare by semver 2.0 precedence (a pre-release is below its release, build
metadata is ignored). The oracle evaluates the same structure with the ``semver`` package's
precedence, independently of olmkit's parser.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any

import pytest
import semver as pysemver
from hypothesis import given, settings
from hypothesis import strategies as st

from olmkit.catalog.semver import Version, parse_range, parse_version

SETTINGS = settings(max_examples=150, deadline=None)

#: pre-release identifiers (none with an "x": blang reads any "x" in a range as a wildcard)
IDENTIFIERS = st.one_of(st.integers(0, 12).map(str), st.sampled_from(["alpha", "beta", "rc", "a-1", "0a", "a0"]))


@st.composite
def versions(draw: Any, build: bool = True) -> str:
    """Strict semver text; small numbers, so that ranges often hit their bounds."""
    text = ".".join(str(draw(st.integers(0, 3))) for _ in range(3))
    pre = draw(st.lists(IDENTIFIERS, max_size=2))
    if pre:
        text += "-" + ".".join(pre)
    if build and draw(st.integers(0, 4)) == 0:
        text += "+" + draw(st.sampled_from(["build.1", "sha-abc", "001"]))
    return text


def precedence(a: str, b: str) -> int:
    return int(pysemver.Version.parse(a).compare(b))


HOLDS = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "": operator.eq,
    "=": operator.eq,
    "==": operator.eq,
    "!": operator.ne,
    "!=": operator.ne,
}


@st.composite
def ranges(draw: Any) -> tuple[str, list[list[tuple[str, str]]]]:
    """A range's text and its structure: OR alternatives of ANDed (operator, version)."""
    alternatives = draw(
        st.lists(
            st.lists(st.tuples(st.sampled_from(sorted(HOLDS)), versions()), min_size=1, max_size=3),
            min_size=1,
            max_size=3,
        )
    )
    texts = []
    for alternative in alternatives:
        conditions = []
        for op, ver in alternative:
            # blang keeps an operator ending in <, > or = together with a version after spaces
            gap = " " * draw(st.integers(0, 2)) if op and op[-1] in "<>=" else ""
            conditions.append(op + gap + ver)
        texts.append((" " * draw(st.integers(1, 2))).join(conditions))
    return " || ".join(texts), alternatives


def oracle(alternatives: list[list[tuple[str, str]]], version: str) -> bool:
    return any(all(HOLDS[op](precedence(version, bound), 0) for op, bound in alt) for alt in alternatives)


@SETTINGS
@given(rng=ranges(), candidates=st.lists(versions(), min_size=1, max_size=6))
def test_ranges_match_as_blang_documents(rng, candidates):
    """Space is AND, || is OR (AND binds tighter), each operator compares by semver precedence."""
    text, alternatives = rng
    parsed = parse_range(text)
    vs = [parse_version(v) for v in candidates]

    assert [oracle(alternatives, v) for v in candidates] == [parsed.matches(v) for v in vs]
    assert [parsed.matches(v) for v in vs] == parsed.matches_each(vs)
    assert text == str(parsed)


#: wildcard forms and the plain ranges they stand for (``M`` major, ``N`` minor)
WILDCARDS = [
    ("{M}.x", ">={M}.0.0 <{M1}.0.0"),
    ("{M}.{N}.x", ">={M}.{N}.0 <{M}.{N1}.0"),
    ("={M}.{N}.x", ">={M}.{N}.0 <{M}.{N1}.0"),
    (">={M}.{N}.x", ">={M}.{N}.0"),
    (">{M}.{N}.x", ">={M}.{N1}.0"),
    (">{M}.x", ">={M1}.0.0"),
    ("<{M}.{N}.x", "<{M}.{N}.0"),
    ("<={M}.{N}.x", "<{M}.{N1}.0"),
    ("<={M}.x", "<{M1}.0.0"),
]


@SETTINGS
@given(
    form=st.sampled_from(WILDCARDS),
    major=st.integers(0, 3),
    minor=st.integers(0, 3),
    candidates=st.lists(versions(), min_size=1, max_size=6),
)
def test_wildcards_expand_to_their_plain_ranges(form, major, minor, candidates):
    """``1.x`` and ``1.2.x`` (alone or after an operator) match what their expansion matches."""
    values = {"M": major, "M1": major + 1, "N": minor, "N1": minor + 1}
    wildcard, plain = (f.format(**values) for f in form)
    vs = [parse_version(v) for v in candidates]

    assert parse_range(plain).matches_each(vs) == parse_range(wildcard).matches_each(vs)


@SETTINGS
@given(texts=st.lists(versions(), min_size=2, max_size=8))
def test_versions_order_by_semver_precedence(texts):
    """compare, equality, hashing and sorting follow semver 2.0 precedence; the text round-trips."""
    parsed = [parse_version(t) for t in texts]
    pairs = [(a, b) for a in range(len(texts)) for b in range(len(texts))]
    ordered = sorted(parsed)

    assert [precedence(texts[a], texts[b]) for a, b in pairs] == [parsed[a].compare(parsed[b]) for a, b in pairs]
    assert [precedence(texts[a], texts[b]) == 0 for a, b in pairs] == [parsed[a] == parsed[b] for a, b in pairs]
    assert all(hash(parsed[a]) == hash(parsed[b]) for a, b in pairs if parsed[a] == parsed[b])
    assert all(precedence(str(a), str(b)) <= 0 for a, b in itertools.pairwise(ordered))
    assert texts == [str(v) for v in parsed]


@SETTINGS
@given(
    core=st.lists(st.integers(0, 3), min_size=3, max_size=3).map(lambda n: ".".join(map(str, n))),
    op=st.sampled_from(["<", ">=", "=", "!="]),
    spoil=st.sampled_from(["v{}", "0{}", "{}.0", "{}-", "{}-01", "{}-a..b", "{}+"]),
)
def test_versions_in_ranges_are_strict(core, op, spoil):
    """After an operator the version is strict: a leading v or zero, a fourth part, an empty
    pre-release, identifier or build, a zero-padded numeric identifier make the range invalid
    (as blang's ParseRange)."""
    bad = spoil.format(core)

    with pytest.raises(ValueError, match="invalid range"):
        parse_range(op + bad)


@SETTINGS
@given(
    version=versions(build=False),
    identifier=st.sampled_from(["x", "xyz", "a-x", "0x"]),
    op=st.sampled_from(sorted(HOLDS)),
    candidates=st.lists(versions(), min_size=1, max_size=4),
)
def test_an_x_anywhere_makes_a_wildcard_part(version, identifier, op, candidates):
    """As blang's ParseRange: a part with an "x" outside a wildcard position (here in the
    pre-release) is expanded as a wildcard that is none: with >= or < it keeps its version,
    with any other operator (which would need the next version) the range is invalid."""
    text = f"{version}.{identifier}" if "-" in version else f"{version}-{identifier}"

    if op in (">=", "<"):
        kept = text.replace(".x", ".0", 1)
        vs = [parse_version(v) for v in candidates]
        assert parse_range(op + kept).matches_each(vs) == parse_range(op + text).matches_each(vs)
    else:
        with pytest.raises(ValueError, match="invalid range"):
            parse_range(op + text)


@SETTINGS
@given(
    numbers=st.lists(st.integers(0, 30), min_size=1, max_size=3),
    zeros=st.lists(st.integers(0, 2), min_size=3, max_size=3),
    prefix=st.sampled_from(["", "v", " v", "  "]),
)
def test_tolerant_parsing_is_blangs_parse_tolerant(numbers, zeros, prefix):
    """ParseTolerant: spaces and a leading v dropped, leading zeros stripped, missing parts are 0."""
    text = prefix + ".".join("0" * z + str(n) for n, z in zip(numbers, zeros, strict=False)) + " "
    full = [*numbers, 0, 0][:3]

    assert Version(*full) == parse_version(text, tolerant=True)
    assert ".".join(map(str, full)) == str(parse_version(text, tolerant=True))

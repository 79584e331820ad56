import pytest
from hypothesis import given
from hypothesis import strategies as st

from olmkit.catalog.semver import parse_range, parse_version


@pytest.mark.parametrize("text", ["1.2.3", "0.0.1-alpha.1", "1.0.0-rc.1+build.5", "10.20.30"])
def test_strict_versions_round_trip(text):
    """str() of a parsed version gives the text back."""
    assert text == str(parse_version(text))


@pytest.mark.parametrize("text", ["v1.2.3", "1.2", "01.2.3", "1.2.3-01", ""])
def test_strict_parse_rejects_what_blang_rejects(text):
    """Leading v, missing patch, leading zeros are errors in strict mode."""
    with pytest.raises(ValueError):
        parse_version(text)


def test_tolerant_parse_fills_and_strips():
    """Tolerant parsing drops a leading v and fills missing minor/patch, as ParseTolerant."""
    assert "1.2.0" == str(parse_version("v1.2", tolerant=True))
    assert "1.0.0" == str(parse_version(" 1 ", tolerant=True))


def test_prerelease_orders_before_release_and_build_is_ignored():
    """1.0.0-alpha < 1.0.0-alpha.1 < 1.0.0-beta < 1.0.0; build metadata does not order."""
    ordered = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0"]
    assert ordered == [str(v) for v in sorted(parse_version(t) for t in reversed(ordered))]
    assert parse_version("1.0.0+a") == parse_version("1.0.0+b")


@pytest.mark.parametrize(
    ("rng", "inside", "outside"),
    [
        (">=1.0.0 <2.0.0", ["1.0.0", "1.9.9", "2.0.0-rc.1"], ["2.0.0", "0.9.0", "1.0.0-rc.1"]),
        ("<2.0.0 || >=3.0.0", ["1.0.0", "3.1.0"], ["2.5.0"]),
        (">1.0.0 <3.0.0 !2.0.3", ["2.0.2", "2.0.4"], ["2.0.3"]),
        ("1.2.x", ["1.2.0", "1.2.9"], ["1.3.0", "1.1.9"]),
        (">= 1.0.0", ["1.0.0"], ["0.1.0"]),
        ("=1.0.0", ["1.0.0"], ["1.0.1"]),
    ],
)
def test_ranges_follow_blang(rng, inside, outside):
    """Space is AND, || is OR, ! excludes, wildcards expand, a pre-release is below its release.

    (blang has no pre-release exclusion.)
    """
    r = parse_range(rng)

    assert [True] * len(inside) == [parse_version(v) in r for v in inside]
    assert [False] * len(outside) == [parse_version(v) in r for v in outside]
    assert rng == str(r)


@pytest.mark.parametrize("rng", ["<v1.13.0", "", "|| >1.0.0", ">1.0.0 ||", ">=x", "~1.2.3"])
def test_bad_ranges_fail_with_the_text(rng):
    """Ranges blang cannot parse raise ValueError quoting the range."""
    with pytest.raises(ValueError, match="invalid range"):
        parse_range(rng)


VERSIONS = st.builds(
    lambda m, n, p, pre: f"{m}.{n}.{p}" + (f"-{pre}" if pre else ""),
    st.integers(0, 3),
    st.integers(0, 3),
    st.integers(0, 3),
    st.sampled_from(["", "alpha", "alpha.1", "1", "rc.2"]),
)
COMPARATORS = st.tuples(st.sampled_from(["", "=", "==", ">", ">=", "<", "<=", "!", "!="]), VERSIONS).map("".join)
RANGES = st.lists(st.lists(COMPARATORS, min_size=1, max_size=3).map(" ".join), min_size=1, max_size=3).map(" || ".join)


ODD_RANGES = st.sampled_from(["1.x", ">=1.2.x <3.x", "1.0.0 || || 2.0.0"])


@given(text=st.one_of(RANGES, ODD_RANGES), versions=st.lists(VERSIONS))
def test_matches_each_is_matches_for_each_version(text, versions):
    """matches_each gives matches() of every version, in order (every operator, OR, AND, wildcards)."""
    parsed = parse_range(text)
    vs = [parse_version(v) for v in versions]

    assert [parsed.matches(v) for v in vs] == parsed.matches_each(vs)


@pytest.mark.parametrize(
    ("rng", "same_as"),
    [
        (">=1.0.0-xyz", ">=1.0.0-xyz"),
        ("<1.0.0-alpha.xy", "<1.0.0-alpha.0y"),
        ("<2.0.0 || >=1.0.0-x", "<2.0.0 || >=1.0.0-0"),
    ],
)
def test_an_x_in_a_pre_release_is_read_as_blang_reads_it(rng, same_as):
    """blang expands every range part holding an "x" as a wildcard: >= and < keep the version
    (its first ".x" read as ".0"), the others need a next version there is none of (regression:
    only ".x" was looked for, so ``>1.0.0-xyz`` was accepted)."""
    versions = [parse_version(v) for v in ("0.9.0", "1.0.0-0", "1.0.0-alpha.0y", "1.0.0-xyz", "1.0.0", "2.0.0")]

    assert parse_range(same_as).matches_each(versions) == parse_range(rng).matches_each(versions)


@pytest.mark.parametrize("rng", [">1.0.0-xyz", "<=1.0.0-xyz", "1.0.0-xyz", "=1.0.0-rc.x", "!=1.0.0-x", "1.0.0+sha.x"])
def test_an_x_in_a_pre_release_after_other_operators_is_invalid(rng):
    """As in blang, these ranges do not parse (regression: they were accepted)."""
    with pytest.raises(ValueError, match="invalid range"):
        parse_range(rng)

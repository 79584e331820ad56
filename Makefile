# The two commands the README promises: `make demo` and `make test`.
# Each creates .venv and installs what it needs by itself.

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-native test-pure lint bench bench-solver bench-compare bench-scaling clean

# The contributed plugins (plugins_contrib/olmkit-*) are installed beside olmkit, as their
# users install them, so the suite tests them through their entry points.
CONTRIB := $(wildcard plugins_contrib/olmkit-*)

$(STAMP): pyproject.toml setup.py $(wildcard olmkit/_solver/*.c olmkit/_solver/*.h olmkit/_solver/_speedups_build.py) $(wildcard plugins_contrib/*/pyproject.toml)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,lint]' $(foreach dist,$(CONTRIB),-e $(dist))
	# pip --quiet swallows the build's output: if the C part did not build, show why
	@$(PY) -c "import olmkit._solver._native" 2>/dev/null || { \
	  echo "*** olmkit: the solver's C part did not build; the compiler says:"; \
	  $(PY) olmkit/_solver/_speedups_build.py || \
	  echo "*** olmkit: using the pure-Python twin (same answers, much slower)"; }
	# byte-compile once: with PYTHONDONTWRITEBYTECODE set, every command would otherwise
	# compile olmkit from source at start-up (about 0.2 s)
	$(PY) -m compileall -q olmkit
	# and the methods attrs generates for olmkit's classes (olmkit/_attrs_code.py): 25-35 ms a command
	$(PY) -m olmkit._attrs_code
	touch $(STAMP)

demo: $(STAMP)
	OLMKIT=$(VENV)/bin/olmkit examples/demo.sh

# The import contracts (pyproject.toml), the whole suite on the C path, then again on the
# pure-Python twin. Property tests draw the same examples every run (tests/conftest.py).
test: $(STAMP)
	$(VENV)/bin/lint-imports --no-cache --no-logo
	HYPOTHESIS_PROFILE=ci $(PY) -m pytest -q
	HYPOTHESIS_PROFILE=ci OLMKIT_PURE_PYTHON=1 $(PY) -m pytest -q -p no:randomly tests/solver tests/resolver

lint: $(STAMP)
	$(VENV)/bin/ruff check olmkit tests benchmarks plugins_contrib
	$(VENV)/bin/ruff format --check olmkit tests benchmarks plugins_contrib
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache --no-logo

# The benchmark modules (pytest-benchmark; they generate their workloads with ../shared/bench).
bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) -m pytest benchmarks/bench_*.py --benchmark-only -p no:randomly -o python_functions="test_* bench_*"

clean:
	rm -rf $(VENV) build *.egg-info olmkit/_solver/_speedups*.so olmkit/_solver/_speedups.c

# Every solver backend on the easy (gen_catalog) and hard (benchmarks/gen_hard.py) suites,
# plus libsolv where python3-solv is installed: writes benchmarks/results/solver.md.
bench-solver: $(STAMP)
	$(PY) benchmarks/solver_suite.py

# olmkit against libsolv on the same generated problem (gen_catalog --seed 1), whole commands,
# cold (a fresh OLMKIT_CACHE_DIR) and warm, with peak memory and the ratio; and `catalog
# validate` cold against the orjson parse of every blob. libsolv needs python3-solv for the
# system Python (Debian/Ubuntu: apt-get install python3-solv; Fedora: dnf install python3-solv);
# without it the table says so and olmkit still runs. One size (default P=2000) writes
# benchmarks/results/compare-P2000.md (and .json); `make bench-scaling` runs P = 500 ... 10000
# (about 10 minutes) and writes compare.md, compare.json and the plot resolve-scaling.png.
SIZES  ?= 2000
REPEAT ?= 3
bench-compare: $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) benchmarks/compare.py --packages $(SIZES) --repeat $(REPEAT)

bench-scaling: SIZES = 500 1000 2000 5000 10000
bench-scaling: bench-compare

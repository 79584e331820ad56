"""``olmkit resolve``, ``olmkit explain`` and ``olmkit bench resolve``.

``olmkit resolve -f FILE [-f FILE ...] [-n NS] [--global-namespace NS] [-o json|yaml|text]``
resolves one namespace from manifest files; ``--catalog DIR --subscribe PKG[/CHANNEL]`` is
the short form. Exit 0 resolved, 1 unsatisfiable, 2 invalid input (unreadable manifests, a
missing ``--catalog``, an unknown ``--solver``), whose message goes to stderr; a package or
channel the short form's catalog lacks stays unsatisfiable, with the close name on stderr. A
resolution error (a broken
constraint in the catalog, an unreachable source, not exactly one OperatorGroup) is an
answer, as upstream's ErrorPreventedResolution is: on stdout, exit 1.

``olmkit bench resolve`` generates a workload with ``gen_catalog.py`` (or takes one with
``--workload``), resolves it ``--repeat`` times and prints the timings as a table (or
``-o json``). A generated workload lives in a temporary directory removed afterwards
(``--keep-workload`` keeps it); sizes beyond :data:`BENCH_MAX_BUNDLES` bundles take
minutes and gigabytes, and need ``--yes``.

.. versionadded:: 0.1
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from olmkit.cli import exits_after_command
from olmkit.cli.options import add_global_namespace_option, namespace_name
from olmkit.cli.output import dump_json, dump_yaml
from olmkit.errors import UsageError

__all__ = ["BENCH_MAX_BUNDLES", "add_commands"]

#: ``--packages x --bundles`` above this needs ``--yes``: the largest workload measured
#: (10,000 x 20) took about 15 s to resolve the first time and 1.3 GB; beyond, minutes.
BENCH_MAX_BUNDLES: Final = 200_000

_GENERATOR = Path("shared") / "bench" / "gen_catalog.py"


def find_generator() -> Path | None:
    """The shared workload generator: ``$OLMKIT_GEN_CATALOG``, else the first ``shared/bench/gen_catalog.py``
    found in the working directory or a directory above it, then above the source tree olmkit runs
    from (the team's checkouts sit next to ``shared/``); ``None`` when there is none."""
    env = os.environ.get("OLMKIT_GEN_CATALOG")
    if env:
        return Path(env)
    for base in (Path.cwd(), *Path.cwd().parents, *Path(__file__).resolve().parents):
        if (base / _GENERATOR).is_file():
            return base / _GENERATOR
    return None


#: The Python that has the OS's libsolv bindings (``python3-solv``), for ``--against libsolv``.
SYSTEM_PYTHON: Final = "/usr/bin/python3"
INSTALL_LIBSOLV: Final = "apt-get install python3-solv (Debian/Ubuntu) or dnf install python3-solv (Fedora)"
#: The libsolv translation of a workload; a script of the source tree, run by the system Python.
LIBSOLV_SCRIPT: Final = Path(__file__).resolve().parents[2] / "benchmarks" / "libsolv_resolve.py"


def libsolv_missing(python: str | None = None) -> str | None:
    """``None`` when ``python`` (default :data:`SYSTEM_PYTHON`) can import libsolv's ``solv``, else why not
    and how to install it."""
    import subprocess

    python = python or SYSTEM_PYTHON
    if not Path(python).exists():
        return f"{python} not found; install python3-solv with {INSTALL_LIBSOLV}"
    done = subprocess.run([python, "-c", "import solv"], capture_output=True, check=False)
    if done.returncode:
        return f"python3-solv is not importable by {python}; install it with {INSTALL_LIBSOLV}"
    if not LIBSOLV_SCRIPT.is_file():
        return f"{LIBSOLV_SCRIPT} not found (it is part of olmkit's source tree, not of the installed package)"
    return None


def _add_resolve_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-f",
        "--filename",
        dest="files",
        action="append",
        default=[],
        metavar="FILE",
        help="manifest file (CatalogSource, OperatorGroup, Subscription, CSV; - for standard input); repeatable",
    )
    p.add_argument(
        "-n",
        "--namespace",
        type=namespace_name,
        default=None,
        help="namespace to resolve (default: the subscriptions')",
    )
    add_global_namespace_option(p)
    p.add_argument("-o", "--output", choices=["text", "json", "yaml"], default="text", help="output format")
    p.add_argument(
        "--catalog",
        default=None,
        metavar="DIR",
        help="short form: a file-based catalog directory, or grpc://HOST:PORT for a registry server",
    )
    p.add_argument(
        "--subscribe",
        action="append",
        default=[],
        metavar="PKG[/CHANNEL]",
        help="short form: subscribe to a package (repeatable)",
    )
    p.add_argument(
        "--solver", default=None, help="solver backend: cryptominisat, native or pure (default: native if built)"
    )
    p.add_argument("--no-cache", action="store_true", help="do not use the on-disk catalog cache")


def add_commands(subparsers: Any) -> None:
    """Add ``resolve``, ``explain`` and ``bench resolve``."""
    p = subparsers.add_parser("resolve", help="resolve a namespace's subscriptions to install steps")
    _add_resolve_options(p)
    p.add_argument("--explain", action="store_true", help="on failure, show the conflicting constraints as a tree")
    p.set_defaults(func=run_resolve)

    e = subparsers.add_parser("explain", help="resolve and explain why it fails")
    _add_resolve_options(e)
    e.set_defaults(func=run_resolve, explain=True)

    bench = subparsers._name_parser_map.get("bench")
    if bench is None:
        bench = subparsers.add_parser("bench", help="benchmarks")
        bench_sub = bench.add_subparsers(title="benchmarks", metavar="BENCHMARK")
    else:  # another command module made the group already
        bench_sub = next(a for a in bench._actions if isinstance(a, argparse._SubParsersAction))
    b = bench_sub.add_parser(
        "resolve",
        help="time resolution on a generated workload",
        description="Generate a workload with gen_catalog.py (or reuse one with --workload), resolve it "
        "--repeat times in this process and print the time of each phase: the first resolution (which also "
        "finds the catalog's graph) and the best of the others.",
    )
    size = b.add_argument_group("workload size (generated workloads)")
    size.add_argument("--packages", "-P", type=_positive, default=500, help="packages in the catalog (default 500)")
    size.add_argument("--bundles", "-B", type=_positive, default=10, help="bundles per package (default 10)")
    size.add_argument("--subscriptions", "-S", type=_positive, default=20, help="subscriptions to resolve (default 20)")
    size.add_argument("--seed", type=int, default=1, help="random seed of the generator (default 1)")
    size.add_argument(
        "--yes",
        action="store_true",
        help=f"run sizes above {BENCH_MAX_BUNDLES:,} bundles (packages x bundles), which take minutes",
    )
    b.add_argument("--repeat", type=_positive, default=3, help="resolutions in one process (default 3)")
    b.add_argument(
        "--workload", default=None, metavar="DIR", help="an existing gen_catalog output directory (no generation)"
    )
    b.add_argument(
        "--generator",
        default=None,
        metavar="PATH",
        help="path of gen_catalog.py (default: $OLMKIT_GEN_CATALOG, else ../shared/bench/gen_catalog.py)",
    )
    b.add_argument(
        "--keep-workload",
        action="store_true",
        help="keep the generated workload's directory (its path is printed; implied by --manifests)",
    )
    b.add_argument("--cold", action="store_true", help="forget the catalog's stored graph before the first run")
    b.add_argument("--manifests", default=None, metavar="FILE", help="also write the workload as manifests")
    b.add_argument("-o", "--output", choices=["text", "json"], default="text", help="output format (default text)")
    b.add_argument(
        "--solver", default=None, help="solver backend: cryptominisat, native or pure (default: native if built)"
    )
    b.add_argument(
        "--against",
        choices=["libsolv"],
        default=None,
        help="also resolve the workload with libsolv (python3-solv under /usr/bin/python3: apt-get or dnf install "
        "python3-solv) and print the ratio olmkit / libsolv",
    )
    b.set_defaults(func=run_bench)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number")
    return value


def _short_form(args: argparse.Namespace) -> list[dict[str, Any]]:
    ns = args.namespace or "default"
    if args.catalog.startswith("grpc://"):  # a registry server (olmkit catalog serve, opm serve)
        name = "catalog"
        spec = {"sourceType": "grpc", "address": args.catalog}
    else:
        catalog = Path(args.catalog).resolve()
        name = catalog.name or "catalog"
        spec = {"sourceType": "file", "path": str(catalog)}
    objs: list[dict[str, Any]] = [
        {"kind": "CatalogSource", "metadata": {"name": name, "namespace": ns}, "spec": spec},
        {"kind": "OperatorGroup", "metadata": {"name": "default", "namespace": ns}},
    ]
    for item in args.subscribe:
        package, _, channel = item.partition("/")
        if not package:
            raise UsageError(f"--subscribe {item!r}: expected PKG[/CHANNEL]")
        sub = {"name": package, "source": name, "sourceNamespace": ns}
        if channel:
            sub["channel"] = channel
        objs.append({"kind": "Subscription", "metadata": {"name": package, "namespace": ns}, "spec": sub})
    return objs


def _check_solver(name: str, pm: Any) -> None:
    """``--solver NAME`` names a usable backend (built in, or a plugin's).

    Raises:
        UsageError: it does not; with the close name and the ones there are.
    """
    from olmkit._solver.backends import backend_names, engine_of
    from olmkit._solver.errors import SolverError
    from olmkit.resolver import use_solver_backends

    use_solver_backends(pm.registry)
    try:
        engine_of(name)
    except SolverError as exc:
        raise UsageError(f"--solver {name!r}: {exc}{_did_you_mean(name, backend_names())}") from None


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    import difflib

    close = difflib.get_close_matches(word, sorted(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _is_address(catalog: str) -> bool:
    """``--catalog grpc://HOST:PORT`` (a server), not a directory."""
    return "://" in catalog


def _short_form_hints(args: argparse.Namespace, pm: Any) -> list[str]:
    """``--subscribe`` packages and channels the ``--catalog`` lacks, with the close names."""
    from olmkit.catalog import load_catalog
    from olmkit.errors import CatalogError

    try:
        catalog = load_catalog(Path(args.catalog), pm.registry, cache=not args.no_cache)
    except CatalogError:
        return []  # the resolution said what is wrong with it
    hints = []
    for item in args.subscribe:
        package, _, channel = item.partition("/")
        channels = catalog.channels.get(package)
        if channels is None:
            hints.append(
                f"--subscribe {item}: package {package!r} is not in {args.catalog}"
                f"{_did_you_mean(package, catalog.packages)}"
            )
        elif channel and channel not in channels:
            hints.append(
                f"--subscribe {item}: package {package!r} has no channel {channel!r}"
                f"{_did_you_mean(channel, channels)} (channels: {', '.join(sorted(channels))})"
            )
    return hints


def build(args: argparse.Namespace, pm: Any) -> Any:
    """The ResolutionRequest the arguments describe."""
    from olmkit.resolver.manifests import Manifest, build_request, load_manifests

    if args.catalog is None and args.subscribe:
        raise UsageError("--subscribe needs --catalog")
    if args.catalog is None and not args.files:
        raise UsageError("give manifest files with -f, or --catalog DIR --subscribe PKG")
    if args.solver is not None:
        _check_solver(args.solver, pm)
    if args.catalog is not None and not _is_address(args.catalog) and not Path(args.catalog).exists():
        raise UsageError(f"--catalog {args.catalog}: no such file or directory")
    manifests = load_manifests(args.files)
    if args.catalog is not None:
        manifests += [Manifest(obj, "<command line>") for obj in _short_form(args)]
    return build_request(
        manifests,
        pm=pm,
        namespace=args.namespace or ("default" if args.catalog and not args.files else None),
        global_namespace=args.global_namespace,
        cache=not args.no_cache,
        backend=args.solver,
    )


def _text(resolution: Any, explain: bool) -> str:
    lines = []
    if resolution.ok:
        if not resolution.steps:
            lines.append(f"namespace {resolution.namespace}: nothing to do")
        for s in resolution.steps:
            what = f"upgrade {s.replaces} -> {s.bundle}" if s.replaces else f"install {s.bundle}"
            why = f"subscription {s.subscription}" if s.subscription else "dependency"
            lines.append(
                f"{what}  ({s.package} {s.version or ''}, {s.catalog_namespace}/{s.catalog} channel {s.channel}; {why})"
            )
    else:
        lines.append(f"{resolution.status}: {resolution.message}")
        if explain and resolution.explanation:
            lines.append("")
            lines.append("why:")
            for root in resolution.explanation:
                lines += ["  " + line for line in root.render()]
    return "\n".join(lines) + "\n"


def run_resolve(args: argparse.Namespace, pm: Any) -> int:
    """Resolve and print; exit 0/1."""
    from olmkit.catalog import defer_writes

    if exits_after_command():
        # the cyclic GC stays off for good: the process ends with the command, and the
        # collection that would follow the resolution (its objects all still young) alone
        # takes 0.1 s on a 200,000-bundle catalog
        gc.disable()
    defer_writes()  # what this command caches is written once its answer is out
    request = build(args, pm)
    resolution = pm.hook.olmkit_resolve(request=request)
    explain = bool(getattr(args, "explain", False))
    if args.output == "json":
        sys.stdout.write(dump_json(resolution.to_json(explain=explain)) + "\n")
    elif args.output == "yaml":
        sys.stdout.write(dump_yaml(resolution.to_json(explain=explain)))
    else:
        sys.stdout.write(_text(resolution, explain))
    if not resolution.ok and args.catalog is not None and not _is_address(args.catalog):
        for hint in _short_form_hints(args, pm):
            sys.stderr.write(f"olmkit: hint: {hint}\n")
    return int(resolution.exit_code)


# --------------------------------------------------------------------------- benchmark


def problem_objects(workload: Path, pm: Any, *, cache: bool = True) -> list[dict[str, Any]]:
    """The manifests a gen_catalog output (``catalog/`` + ``problem.json``) stands for.

    A CatalogSource, an OperatorGroup, the subscriptions, and the installed bundles as
    installed CSVs carrying the bundle's properties annotation (their subscriptions point
    at them through ``status.installedCSV``).
    """
    import json

    from olmkit.catalog import load_catalog

    problem = json.loads((workload / "problem.json").read_text())
    ns, cat = problem["namespace"], problem["catalog"]
    catalog = load_catalog(workload / "catalog", pm.registry, name=cat, cache=cache)
    installed = {i["package"]: i["bundle"] for i in problem["installed"]}
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource",
            "metadata": {"name": cat, "namespace": ns},
            "spec": {"sourceType": "file", "path": str((workload / "catalog").resolve())},
        },
        {"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup", "metadata": {"name": "og", "namespace": ns}},
    ]
    for sub in problem["subscriptions"]:
        status = {"installedCSV": installed[sub["package"]]} if sub["package"] in installed else {}
        objs.append(
            {
                "apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "Subscription",
                "metadata": {"name": sub["package"], "namespace": ns},
                "spec": {
                    "name": sub["package"],
                    "channel": sub["channel"],
                    "source": sub["source"],
                    "sourceNamespace": ns,
                },
                "status": status,
            }
        )
    for package, name in installed.items():
        b = catalog.bundles[package][name]
        props = [{"type": p.type, "value": p.value} for p in b.properties]
        objs.append(
            {
                "apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "ClusterServiceVersion",
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "annotations": {"operatorframework.io/properties": json.dumps({"properties": props})},
                },
                "spec": {"version": b.version},
            }
        )
    return objs


def problem_request(workload: Path, pm: Any, *, cache: bool = True) -> Any:
    """Turn a gen_catalog output into a ResolutionRequest (see :func:`problem_objects`)."""
    from olmkit.resolver.manifests import Manifest, build_request

    objs = problem_objects(workload, pm, cache=cache)
    ns = objs[0]["metadata"]["namespace"]
    return build_request([Manifest(o, str(workload / "problem.json")) for o in objs], pm=pm, namespace=ns, cache=cache)


def _peak_rss_mb() -> float:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024, 1)


def _answer_digest(resolution: Any) -> str:
    """A digest of the answer (steps, or message and explanation), to compare backends."""
    import hashlib

    return hashlib.sha256(dump_json(resolution.to_json(explain=True)).encode()).hexdigest()


def _solver_figures(counters: Any, backend: str, engine: str) -> dict[str, Any]:
    """What ran and how hard it worked: backend, implementation and the solver's counters."""
    from olmkit._solver import implementation

    impl = implementation() if engine == "cryptominisat" else engine
    out: dict[str, Any] = {"backend": backend, "implementation": "native C" if impl == "native" else "pure Python"}
    for key in ("variables", "clauses", "propagations", "backend_calls", "conflicts", "guesses", "backtracks"):
        out[key] = counters.get(f"sat_{key}", 0)
    if counters.get("sat_switched"):
        out["switched_to"] = "cryptominisat"
    return out


def run_bench(args: argparse.Namespace, pm: Any) -> int:
    """Generate (or reuse) a workload and time resolution, split by phase.

    ``--repeat N`` resolutions in one process: the first also finds the catalog's graph
    (in memory, on disk, or compiled: ``--cold`` forgets a stored one first); the best of
    the others is reported. ``peak_rss_mb_first`` is the process's peak when the first
    resolution is done, ``peak_rss_mb`` at the end; ``load_average`` is the machine's
    (1, 5, 15 minutes) at the end. ``resolution`` is the total without the catalog source's
    reload (``catalog``), which every resolution does. ``--manifests FILE`` also writes
    the workload as manifests, for ``olmkit resolve -f FILE``.
    """
    from olmkit._solver.backends import engine_of
    from olmkit._solver.errors import SolverError
    from olmkit.resolver import use_solver_backends

    use_solver_backends(pm.registry)
    try:
        backend, engine, _ = engine_of(args.solver)  # an unknown backend is a usage error before any work
    except SolverError as exc:
        raise UsageError(f"--solver: {exc}") from None

    if args.workload:
        workload = Path(args.workload)
        if not (workload / "problem.json").is_file() or not (workload / "catalog").is_dir():
            raise UsageError(f"{workload}: not a gen_catalog output (a catalog/ directory and problem.json)")
        return _bench(args, pm, workload, backend, engine)
    generator = Path(args.generator) if args.generator else find_generator()
    if generator is None or not generator.is_file():
        raise UsageError(
            f"workload generator not found: {generator or '../shared/bench/gen_catalog.py'}"
            " (pass --generator PATH or --workload DIR)"
        )
    bundles = args.packages * args.bundles
    if bundles > BENCH_MAX_BUNDLES and not args.yes:
        raise UsageError(
            f"--packages {args.packages} --bundles {args.bundles} is {bundles:,} bundles: generating and "
            f"resolving more than {BENCH_MAX_BUNDLES:,} takes minutes and gigabytes of memory; pass --yes to run it"
        )
    import tempfile

    workload = Path(tempfile.mkdtemp(prefix="olmkit-bench-"))
    try:
        _generate(generator, workload, args)
        return _bench(args, pm, workload, backend, engine)
    finally:
        if args.keep_workload or args.manifests:  # the manifests name its catalog
            sys.stderr.write(f"workload kept in {workload}\n")
        else:
            import shutil

            shutil.rmtree(workload, ignore_errors=True)


@contextmanager
def _progress(what: str) -> Iterator[None]:
    """``what ...`` on stderr, the seconds ticking when stderr is a terminal, then ``done in N s``."""
    stream = sys.stderr
    tty = stream.isatty()
    start = time.perf_counter()
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(0.5):
            stream.write(f"\r{what} ... {time.perf_counter() - start:.0f} s")
            stream.flush()

    stream.write(f"{what} ...")
    stream.flush()
    ticker = threading.Thread(target=tick, daemon=True) if tty else None
    if ticker is not None:
        ticker.start()
    try:
        yield
    finally:
        stop.set()
        if ticker is not None:
            ticker.join()
            stream.write(f"\r{what} ...")
        stream.write(f" done in {time.perf_counter() - start:.1f} s\n")


def _generate(generator: Path, workload: Path, args: argparse.Namespace) -> None:
    import subprocess

    command = [sys.executable, str(generator), "--packages", str(args.packages), "--bundles", str(args.bundles)]
    command += ["--subscriptions", str(args.subscriptions), "--seed", str(args.seed), str(workload)]
    what = f"generating {args.packages:,} packages x {args.bundles} bundles, {args.subscriptions} subscriptions"
    with _progress(what):
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"{generator} failed (exit {done.returncode}): {last}")


def _bench_table(data: dict[str, Any]) -> str:
    """The figures as text: a summary, then one row per phase for the first and the warm run."""
    from olmkit.cli.output import render_table

    lines = [
        f"workload      {data['workload']}",
        f"status        {data['status']} ({data['steps']} steps)",
        f"catalog load  {data['catalog_load_seconds']:.3f} s",
        f"peak RSS      {data['peak_rss_mb_first']} MB after the first run, {data['peak_rss_mb']} MB at the end",
        f"load average  {' '.join(str(x) for x in data['load_average'])}",
    ]
    ref = data.get("libsolv")
    if ref is not None and "error" in ref:
        lines.append(f"libsolv       not run: {ref['error']}")
    elif ref is not None:
        lines.append(
            f"libsolv       load {ref['load_seconds']:.3f} s + solve {ref['solve_seconds']:.3f} s, "
            f"peak RSS {ref['peak_rss_mb']} MB ({ref['status']}, {ref['installed']} installed)"
        )
        ratio = {k: "n/a" if v is None else f"{v:.2f}x" for k, v in data["ratio"].items()}
        lines.append(
            f"olmkit/libsolv  first {ratio['first']} (catalog load + first resolution / load + solve), "
            f"warm {ratio['warm']} (warm resolution / solve)"
        )
    lines.append("")
    first, warm = data["first"]["timings"], data["warm"]["timings"]
    phases = list(dict.fromkeys([*first, *warm]))
    rows = [{"phase": p, "first": first.get(p), "warm": warm.get(p)} for p in phases]
    rows.append({"phase": "cpu", "first": data["first"]["cpu"], "warm": data["warm"]["cpu"]})

    def seconds(key: str) -> Any:
        return lambda row: "" if row[key] is None else f"{row[key]:.4f}"

    lines.append(
        render_table(rows, [("phase", "phase"), ("first (s)", seconds("first")), ("warm (s)", seconds("warm"))])
    )
    counters = {**data["first"]["counters"], **data["warm"]["counters"]}
    if counters:
        lines += [
            "",
            render_table(
                [
                    {
                        "counter": k,
                        "first": data["first"]["counters"].get(k, ""),
                        "warm": data["warm"]["counters"].get(k, ""),
                    }
                    for k in counters
                ],
                [("counter", "counter"), ("first", "first"), ("warm", "warm")],
            ),
        ]
    return "\n".join(lines) + "\n"


def _bench(args: argparse.Namespace, pm: Any, workload: Path, backend: str, engine: str) -> int:
    from olmkit._solver.backends import instrument
    from olmkit.resolver import clear_graphs, graph_path, resolve

    start = time.perf_counter()
    try:
        request = problem_request(workload, pm)
    except (ValueError, KeyError, TypeError) as exc:  # JSON errors are ValueErrors
        raise UsageError(f"{workload / 'problem.json'}: not a gen_catalog problem: {exc!r}") from None
    if args.solver is not None:
        import attrs

        request = attrs.evolve(request, backend=backend)
    catalog = request.sources[0].source.load()
    load_seconds = time.perf_counter() - start
    if args.manifests:
        Path(args.manifests).write_text(
            dump_yaml({"apiVersion": "v1", "kind": "List", "items": problem_objects(workload, pm)})
        )
    if args.cold:
        clear_graphs()
        graph_path(catalog.digest, pm.registry, catalog.name).unlink(missing_ok=True)
    runs = []
    first_peak = 0.0
    counting = instrument(True)
    try:
        for _ in range(max(1, args.repeat)):
            cpu = time.process_time()
            resolution = resolve(request)
            runs.append((resolution, time.process_time() - cpu))
            first_peak = first_peak or _peak_rss_mb()
    finally:
        instrument(counting)

    def figures(resolution: Any, cpu: float) -> dict[str, Any]:
        timings = dict(resolution.timings)
        timings["resolution"] = timings.get("total", 0.0) - timings.get("catalog", 0.0)
        return {
            "timings": {k: round(v, 4) for k, v in timings.items()},
            "cpu": round(cpu, 4),
            "counters": dict(resolution.counters),
        }

    warm = runs[1:] or runs
    best = min(warm, key=lambda r: r[0].timings.get("total", 0.0))
    data = {
        "workload": str(workload)
        if args.workload or args.keep_workload or args.manifests
        else "generated, removed afterwards",
        "solver": _solver_figures(best[0].counters, backend, engine),
        "catalog_load_seconds": round(load_seconds, 4),
        "status": best[0].status,
        "answer_sha256": _answer_digest(best[0]),
        "steps": len(best[0].steps),
        "first": figures(*runs[0]),
        "warm": figures(*best),
        "peak_rss_mb_first": first_peak,
        "peak_rss_mb": _peak_rss_mb(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if getattr(args, "against", None) == "libsolv":
        data["libsolv"] = _libsolv(workload)
        data["ratio"] = _ratio(data)
    if args.output == "json":
        sys.stdout.write(dump_json(data) + "\n")
    else:
        sys.stdout.write(_bench_table(data))
    return 0


def _libsolv(workload: Path) -> dict[str, Any]:
    """libsolv's figures on ``workload`` (``benchmarks/libsolv_resolve.py``), or why it did not run."""
    import json
    import subprocess

    missing = libsolv_missing()
    if missing:
        sys.stderr.write(f"olmkit: libsolv not run: {missing}\n")
        return {"error": missing}
    command = [SYSTEM_PYTHON, str(LIBSOLV_SCRIPT), str(workload), "--repeat", "3"]
    with _progress("resolving with libsolv"):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"{LIBSOLV_SCRIPT.name} failed (exit {done.returncode}): {last}"}
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def _ratio(data: dict[str, Any]) -> dict[str, float | None] | None:
    """olmkit / libsolv: the first resolution with the catalog's load against libsolv's load and solve,
    and a warm resolution against libsolv's solve (its pool built); ``None`` where libsolv took no
    measurable time."""
    ref = data["libsolv"]
    if "solve_seconds" not in ref:
        return None
    first = data["catalog_load_seconds"] + data["first"]["timings"].get("total", 0.0)
    warm = data["warm"]["timings"].get("total", 0.0)
    cold_ref = ref["load_seconds"] + ref["solve_seconds"]
    return {
        "first": round(first / cold_ref, 2) if cold_ref > 0 else None,
        "warm": round(warm / ref["solve_seconds"], 2) if ref["solve_seconds"] > 0 else None,
    }

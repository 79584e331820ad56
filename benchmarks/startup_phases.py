"""Where an ``olmkit`` command's start-up goes: wall and CPU at each phase, modules and attrs classes.

Runs the command line in this process (as the ``olmkit`` program does, with the cache of
attrs' generated code when the install has one) and prints, in ms since this script started
(the interpreter's own start-up, ``python -c pass``, comes before): ``olmkit.cli`` imported,
the parser built (the command's module imported), the plugin manager loaded, the first
listing of the catalog directory named by ``--catalog-dir`` (the end of start-up), the end
of the command. Then the modules imported and the attrs classes made by the command, and
the slowest ``importlib.import_module`` calls (command modules and plugins).

    OLMKIT_CACHE_DIR=$(mktemp -d) python benchmarks/startup_phases.py --catalog-dir W/catalog \\
        resolve -f W/manifests.yaml -o json >/dev/null

Run it with another install's interpreter to compare (it needs nothing from this tree).
"""

from __future__ import annotations

import sys
import time

T0, C0 = time.perf_counter(), time.process_time()
MARKS: list[tuple[str, float, float]] = []


def mark(name: str) -> None:
    MARKS.append((name, time.perf_counter() - T0, time.process_time() - C0))


def main() -> int:
    argv = sys.argv[1:]
    catalog_dir = ""
    if argv[:1] == ["--catalog-dir"]:
        catalog_dir, argv = argv[1], argv[2:]
    import importlib

    slow: dict[str, float] = {}
    original = importlib.import_module

    def import_module(name: str, package: str | None = None) -> object:
        start, new = time.perf_counter(), name not in sys.modules
        try:
            return original(name, package)
        finally:
            if new:
                slow[name] = time.perf_counter() - start

    importlib.import_module = import_module  # type: ignore[assignment]
    classes: list[str] = []
    import attr._make

    build = attr._make._ClassBuilder.build_class

    def build_class(self: object) -> type:
        made = build(self)
        classes.append(made.__module__)
        return made

    attr._make._ClassBuilder.build_class = build_class  # type: ignore[method-assign]
    try:
        from olmkit import _attrs_code  # type: ignore[attr-defined,unused-ignore]

        _attrs_code.install()
    except ImportError:  # an install without the cache
        pass
    before = set(sys.modules)
    import olmkit.cli as cli

    mark("olmkit.cli imported")
    build_parser = cli.build_parser

    def timed_build_parser(*args: object, **kwargs: object) -> object:
        mark("parser: start")
        parser = build_parser(*args, **kwargs)  # type: ignore[arg-type]
        mark("parser: built")
        return parser

    cli.build_parser = timed_build_parser  # type: ignore[assignment]
    load = cli.LazyPluginManager.load

    def timed_load(self: cli.LazyPluginManager) -> object:
        if self.loaded:
            return load(self)
        mark("plugins: start")
        pm = load(self)
        mark("plugins: loaded")
        return pm

    cli.LazyPluginManager.load = timed_load  # type: ignore[method-assign]
    listed: list[bool] = []

    def audit(event: str, args: tuple[object, ...]) -> None:
        listing = event in ("os.scandir", "os.listdir") and args and catalog_dir in str(args[0])
        if listing and catalog_dir and not listed:
            listed.append(True)
            mark("catalog: first listing (end of start-up)")

    sys.addaudithook(audit)
    code = cli.main(argv)
    mark("command: end")
    for name, wall, cpu in MARKS:
        sys.stderr.write(f"{wall * 1000:8.1f} ms wall {cpu * 1000:8.1f} ms CPU  {name}\n")
    olmkit = sorted(m for m in set(sys.modules) - before if m.startswith("olmkit"))
    sys.stderr.write(f"modules imported: {len(set(sys.modules) - before)} ({len(olmkit)} of olmkit)\n")
    sys.stderr.write(f"attrs classes made: {len(classes)}\n")
    for name, seconds in sorted(slow.items(), key=lambda item: -item[1])[:12]:
        sys.stderr.write(f"  import_module {name}: {seconds * 1000:.1f} ms\n")
    return code


if __name__ == "__main__":
    sys.exit(main())

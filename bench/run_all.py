"""Runs every benchmark in bench/ in turn (``make bench``): each ``bench_*.py`` module
and each sub-package's ``run.py``, calling its ``main``.

Run: ``.venv/bin/python -m bench.run_all [--quick] [--write] [--only NAME ...]``.
A ``main(quick=..., write=...)`` is called with keywords; a ``main(argv)`` gets
``--quick`` / ``--write`` as arguments when it declares them. One failing benchmark is
reported and the others still run; the exit status says whether all passed.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import pkgutil
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
PACKAGE = "bench"


def discover() -> list[str]:
    """Module names of the benchmarks, in a stable order."""
    names: list[str] = []
    for info in sorted(pkgutil.iter_modules([str(BENCH_DIR)]), key=lambda i: i.name):
        if info.ispkg:
            if (BENCH_DIR / info.name / "run.py").exists():
                names.append(f"{PACKAGE}.{info.name}.run")
        elif info.name.startswith("bench_"):
            names.append(f"{PACKAGE}.{info.name}")
    return names


def _argv_flags(main: Callable[..., Any], quick: bool, write: bool) -> list[str]:
    """The flags an argparse-style ``main(argv)`` understands, read from its source so a
    benchmark without ``--quick`` is not handed one it would reject."""
    try:
        source = inspect.getsource(inspect.getmodule(main) or main)
    except (OSError, TypeError):
        source = ""
    flags = []
    if quick and '"--quick"' in source:
        flags.append("--quick")
    if write and '"--write"' in source:
        flags.append("--write")
    return flags


def call_main(module_name: str, *, quick: bool, write: bool) -> None:
    module = importlib.import_module(module_name)
    main = getattr(module, "main", None)
    if not callable(main):
        raise SystemExit(f"{module_name} has no main()")
    params = inspect.signature(main).parameters
    if "quick" in params:
        kwargs: dict[str, Any] = {"quick": quick}
        if "write" in params:
            kwargs["write"] = write
        main(**kwargs)
    else:
        main(_argv_flags(main, quick, write))


def run_all(names: Sequence[str], *, quick: bool, write: bool) -> list[tuple[str, str, float]]:
    outcomes = []
    for name in names:
        load = os.getloadavg()[0]
        print(f"\n=== {name} (quick={quick}, load {load:.1f}) ===", flush=True)
        start = time.perf_counter()
        try:
            call_main(name, quick=quick, write=write)
            status = "ok"
        except (Exception, SystemExit) as e:  # noqa: BLE001 - report and go on to the next
            if isinstance(e, SystemExit) and e.code in (0, None):
                status = "ok"
            else:
                traceback.print_exc()
                status = f"failed: {e}"
        outcomes.append((name, status, time.perf_counter() - start))
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the smaller size of each benchmark")
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    ap.add_argument("--only", nargs="*", default=None,
                    help="module names to run (e.g. bench_storage recall_quality)")
    args = ap.parse_args(argv)
    names = discover()
    if args.only:
        wanted = set(args.only)
        unknown = wanted - {n.split(".")[1] for n in names}
        if unknown:
            ap.error(f"unknown benchmark(s) {sorted(unknown)}; known: "
                     f"{', '.join(n.split('.')[1] for n in names)}")
        names = [n for n in names if n.split(".")[1] in wanted]
    outcomes = run_all(names, quick=args.quick, write=args.write)
    print("\n=== summary ===")
    for name, status, secs in outcomes:
        print(f"{name:40s} {status:10s} {secs:8.1f} s")
    return 0 if all(s == "ok" for _, s, _ in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())

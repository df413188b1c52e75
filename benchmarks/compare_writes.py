"""The CPU of the four measured writes under two library sources, compared in rotation.

``bench.py`` reports the CPU per write of one source, and those figures move with the
machine's speed within the hour. To tell what a change of the code did, this program
runs two worker processes, one per source, on stores built alike on tmpfs (a scope of
1,000 memories, and memories to seal and restore), and has them take turns: in each
round each worker calls ``materialize_once``, ``ingest_event``, seal and restore
``--calls`` times each and reports the median CPU per call
(``time.process_time_ns``) of every operation; the worker that goes first alternates.
It prints, per operation, the median over the rounds of each source's figure and the
median of the per-round ratios (new / base).

    python benchmarks/compare_writes.py BASE [--rounds 20] [--calls 64]

``BASE`` is a git revision of this repository (its ``src`` tree is extracted with
``git archive`` into a temporary directory) or a directory that holds a ``src`` tree.
The new source is this checkout's ``src``. Both run with this checkout's benchmark
helpers, so the base must accept the same drafts and commands.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import IO

HERE = Path(__file__).resolve().parent
OPERATIONS = ("materialize_once", "ingest_event", "govern seal", "govern restore")
SCOPE_MEMORIES = 1_000


def _shared_memory() -> str | None:
    """tmpfs, where a flush costs next to nothing (None: the default temporary dir)."""
    return "/dev/shm" if os.path.isdir("/dev/shm") else None


def worker(src: str, rounds: int, calls: int) -> None:
    """Build a store with the library of ``src`` and answer each line of stdin (a round)
    with the median CPU per call, in µs, of each operation."""
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, src)
    from bench import command, event, memory
    from harness import Clock

    import trueheart_core  # the library of ``src`` (first on the path)
    from trueheart_core import EntityType, GovernanceAction, Scope, SQLiteRepository, TrueHeart

    if not str(Path(trueheart_core.__file__).resolve()).startswith(str(Path(src).resolve())):
        raise SystemExit(f"the library was not imported from {src}")
    directory = tempfile.mkdtemp(dir=_shared_memory())
    try:
        service = TrueHeart(SQLiteRepository(os.path.join(directory, "w.db")), clock=Clock())
        scope = Scope("bench", "owner", "compare")
        governed = Scope("bench", "owner", "compare-govern")
        service.ingest_event(event(scope, "src", 0))
        service.ingest_event(event(governed, "src", 0))
        for k in range(SCOPE_MEMORIES):
            service.materialize_once(memory(scope, f"m{k}", "src", k + 1))
        total = rounds * calls
        for k in range(2 * total):
            service.materialize_once(memory(governed, f"g{k}", "src", k + 1))
        for k in range(total, 2 * total):
            seal = command(governed, GovernanceAction.SEAL, EntityType.MEMORY, f"g{k}")
            service.govern(seal)
        print("ready", flush=True)
        done = 0
        for _ in sys.stdin:
            medians = []
            for name in OPERATIONS:
                spent = []
                for j in range(done, done + calls):
                    start = time.process_time_ns()
                    if name == "materialize_once":
                        service.materialize_once(memory(scope, f"new{j}", "src", 5000 + j))
                    elif name == "ingest_event":
                        service.ingest_event(event(scope, f"ev{j}", j + 5))
                    else:
                        action, memory_id = (
                            (GovernanceAction.SEAL, f"g{j}")
                            if name == "govern seal"
                            else (GovernanceAction.RESTORE, f"g{total + j}")
                        )
                        service.govern(command(governed, action, EntityType.MEMORY, memory_id))
                    spent.append(time.process_time_ns() - start)
                medians.append(statistics.median(spent) / 1000)
            done += calls
            print(" ".join(f"{m:.2f}" for m in medians), flush=True)
        service.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _base_source(base: str, scratch: Path) -> str:
    """The ``src`` directory of ``base``: a directory holding one, or a git revision."""
    if os.path.isdir(os.path.join(base, "src")):
        return os.path.join(base, "src")
    archive = scratch / "base.tar"
    with archive.open("wb") as out:
        done = subprocess.run(
            ["git", "-C", str(HERE.parent), "archive", base, "src"],
            stdout=out,
            stderr=subprocess.DEVNULL,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(f"{base}: neither a directory with src/ nor a git revision of it")
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later
            tar.extractall(scratch / "base", filter="data")
        else:
            tar.extractall(scratch / "base")
    return str(scratch / "base" / "src")


def _start(src: str, rounds: int, calls: int) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--worker", src, "--rounds", str(rounds), "--calls", str(calls)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    if process.stdout.readline().strip() != "ready":
        raise SystemExit("a worker did not start")
    return process


def _round(process: subprocess.Popen[str]) -> list[float]:
    stdin: IO[str] | None = process.stdin
    stdout: IO[str] | None = process.stdout
    assert stdin is not None and stdout is not None
    stdin.write("round\n")
    stdin.flush()
    return [float(x) for x in stdout.readline().split()]


def compare(base: str, rounds: int, calls: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        sources = {"base": _base_source(base, Path(scratch)), "new": str(HERE.parent / "src")}
        workers = {name: _start(src, rounds, calls) for name, src in sources.items()}
        figures: dict[str, list[list[float]]] = {"base": [], "new": []}
        try:
            for number in range(rounds):
                order = ("base", "new") if number % 2 == 0 else ("new", "base")
                for name in order:
                    figures[name].append(_round(workers[name]))
        finally:
            for process in workers.values():
                if process.stdin is not None:
                    process.stdin.close()
                process.wait()
    print(f"median CPU per call on tmpfs, µs ({rounds} rounds of {calls} calls each)")
    print(f"{'operation':18s} {'base':>8s} {'new':>8s}  new / base")
    for k, name in enumerate(OPERATIONS):
        base_us = statistics.median(r[k] for r in figures["base"])
        new_us = statistics.median(r[k] for r in figures["new"])
        ratio = statistics.median(
            n[k] / b[k] for b, n in zip(figures["base"], figures["new"], strict=True)
        )
        print(f"{name:18s} {base_us:8.1f} {new_us:8.1f}  {ratio:.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", nargs="?", help="a git revision, or a directory with src/")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=64)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rounds < 1 or args.calls < 1:
        parser.error("--rounds and --calls must be at least 1")
    if args.worker is not None:
        worker(args.worker, args.rounds, args.calls)
    elif args.base is None:
        parser.error("name the base source")
    else:
        compare(args.base, args.rounds, args.calls)


if __name__ == "__main__":
    main()

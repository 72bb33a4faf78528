"""Helpers shared by the benchmarks: where the public data is, a container on a scratch directory, timing, and
what a process uses (CPU seconds and resident memory, read from /proc: the benchmarks run on Linux)."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Self, TypeVar

if TYPE_CHECKING:
    from backend.container import Services

REPO = Path(__file__).resolve().parents[1]
# How often RssSampler looks: often enough to catch a peak of an upload or an answer.
RSS_SAMPLE_SECONDS = 0.1

T = TypeVar("T")


def shared_data() -> Path:
    path = Path(os.environ.get("AXIOM_SHARED_DATA", REPO.parent / "shared" / "data"))
    if not path.is_dir():
        sys.exit(f"public data not found at {path}; set AXIOM_SHARED_DATA to the folder holding beir-scifact/ and pdfs/")
    return path


def scratch_services(work_dir: Path, *, embedding_cache: Path | None = None, **overrides) -> Services:
    """Services on fresh stores under ``work_dir``; the embedding cache is the repo's unless one is given."""
    # Imported here, so scripts that only time or measure do not load the container.
    from backend.config import Settings
    from backend.container import build_services

    cache = embedding_cache or Settings().embedding_cache_path
    return build_services(Settings(data_dir=work_dir, embedding_cache_path=cache, **overrides))


def timed(action: Callable[..., T], *args) -> tuple[T, float]:
    """``action(*args)`` and the seconds it took."""
    started = time.perf_counter()
    result = action(*args)
    return result, time.perf_counter() - started


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def status_kib(pid: int | str, field: str) -> int:
    """A memory field of /proc/<pid>/status in KiB (VmRSS: resident now; VmHWM: the peak); 0 for a process
    that has ended. ``pid`` "self" is this process: its VmHWM is its own, where ru_maxrss would carry over the
    parent's from before the exec."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except (FileNotFoundError, ProcessLookupError):
        return 0
    return next((int(line.split()[1]) for line in lines if line.startswith(f"{field}:")), 0)


def own_rss_mib(pid: int) -> float:
    """The process alone, without its children (a server's reader processes)."""
    return status_kib(pid, "VmRSS") / 1024


def peak_rss_mib(pid: int | str = "self") -> float:
    return status_kib(pid, "VmHWM") / 1024


def child_pids(pid: int) -> list[int]:
    children = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except (FileNotFoundError, ProcessLookupError):  # the process ended
        return []
    for task in tasks:  # each thread lists the children it started
        try:
            children += [int(child) for child in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):  # a server ends a thread after each answer stream
            continue
    return children


def tree_rss_kib(pid: int) -> int:
    """Resident memory of the process and all its descendants."""
    return status_kib(pid, "VmRSS") + sum(tree_rss_kib(child) for child in child_pids(pid))


def cpu_seconds(pid: int | str) -> float:
    """User + system seconds of a live process (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    return cpu_seconds(pid) + sum(tree_cpu_seconds(child) for child in child_pids(pid))


class RssSampler:
    """Peak resident memory of a process and its descendants, sampled on a background thread."""

    def __init__(self, pid: int) -> None:
        self._pid = pid
        self._peak_kib = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def take_peak_mib(self) -> float:
        """The peak since the last call (so each level gets its own)."""
        with self._lock:
            peak, self._peak_kib = self._peak_kib, tree_rss_kib(self._pid)
        return peak / 1024

    def _run(self) -> None:
        while not self._stop.wait(RSS_SAMPLE_SECONDS):
            rss = tree_rss_kib(self._pid)
            with self._lock:
                self._peak_kib = max(self._peak_kib, rss)

"""Giving memory that Python and the libraries have freed back to the operating system, and keeping glibc from
spreading it over many heaps.

glibc keeps freed heap pages for reuse, so a process that once held a large upload or a parse's objects stays
that large though nothing uses the memory any more: 30 PDFs indexed in one process left ~86 MB that
``malloc_trim`` returned at once (docs/benchmarks.md). It is called after work that allocates a lot and then lets
go of it (an upload indexed, a file read).

glibc also gives threads heaps of their own ("arenas", up to 8 per core), and what one keeps in use pins the pages
around it, which no trim returns. The server's threads (the request pool, the ingestion workers, ONNX Runtime's and
Chroma's) spread four PDF uploads over 15 arenas holding 5-37 MiB each: +213 MiB, against +43 MiB with two arenas
(docs/benchmarks.md). Elsewhere (musl, macOS) there is nothing to call and nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

_M_ARENA_MAX = -8  # mallopt's parameter number, from glibc's malloc.h


@functools.cache
def _libc() -> ctypes.CDLL | None:
    libc_name = ctypes.util.find_library("c")
    return None if libc_name is None else ctypes.CDLL(libc_name)


def release_free_memory() -> None:
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is not None:
        trim(0)


def limit_heap_arenas(count: int) -> None:
    """At most ``count`` glibc heaps for the threads started from now on; the operator's MALLOC_ARENA_MAX (which
    glibc read at start) is left as it is."""
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is not None and "MALLOC_ARENA_MAX" not in os.environ:
        mallopt(_M_ARENA_MAX, count)

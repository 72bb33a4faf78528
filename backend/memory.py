"""Giving memory that Python and the libraries have freed back to the operating system.

glibc keeps freed heap pages for reuse, so a process that once held a large upload or a parse's objects stays
that large though nothing uses the memory any more: 30 PDFs indexed in one process left ~86 MB that
``malloc_trim`` returned at once (docs/benchmarks.md). It is called after work that allocates a lot and then lets
go of it (an upload indexed, a file read); elsewhere (musl, macOS) there is nothing to call and nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return None
    return getattr(ctypes.CDLL(libc_name), "malloc_trim", None)


def release_free_memory() -> None:
    trim = _malloc_trim()
    if trim is not None:
        trim(0)

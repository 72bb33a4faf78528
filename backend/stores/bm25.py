"""Per-chat BM25 keyword index, persisted as one JSON-lines file per chat and loaded lazily.

Two engines per chat: one over child chunks, one over parents (a parent's terms are its children's terms, in
reading order). Parent-level BM25 sees all of a passage's terms at once, which a ~400-char child cannot: on
SciFact's train split it ranks 0.695 nDCG@10 vs 0.645 for children (docs/benchmarks.md). Deriving it from the
children keeps one file, one lock and one delete path: the parent engine can never hold a chunk the child
engine does not, nor outlive a deleted document. Child overlap repeats ~50 characters per boundary in the
parent's terms; measured, that changes nothing (0.6955 vs 0.6951 from the parent's own text).

Engine: bm25s (a sparse matrix of precomputed scores), chosen over rank-bm25 by bench/bm25.py: the same
nDCG@10 on SciFact, queries ~0.1 ms instead of ~100 ms at 10k chunks. The matrix is never stored: it is
rebuilt from the stored terms on first use and after every add/delete, ~0.8 s of CPU at 10k chunks, less for
a typical chat.

File format (``<index_dir>/chat_<id>.jsonl``): a header line ``{"format", "version", "tokenizer"}``, then one
line per chunk with the Chunk fields and its ``terms`` space-separated (a term never contains whitespace, and
one string per chunk reads several times faster than a JSON list). Terms made by a tokenizer with another
signature are recomputed from the chunk text on load. Every save writes a temporary file and ``os.replace``s
it, so a crash mid-save leaves the previous index intact.

A file that cannot be read is logged, and searching that chat raises RetrievalFailed rather than answering
"no match" for chunks it cannot see (hybrid retrieval then relies on dense retrieval alone, and fails only if
that fails too); ``count`` is 0. The unreadable file stays until the next ``add`` for that chat overwrites it
with just the chunks given from then on, after which search works again (``delete_chat`` removes it); chunks
that were only in the unreadable file are lost to keyword search until they are re-added.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

import bm25s
import numpy as np

from backend.errors import RetrievalFailed
from backend.ids import collection_name
from backend.models import Chunk, ScoredChunk
from backend.retrieval.tokenize import Tokenizer

logger = logging.getLogger(__name__)
# bm25s sets its own logger to DEBUG when imported, so every index build printed "Building index from tokens"
# through whatever handler the application has (the CLI's, uvicorn's): keep only its warnings.
logging.getLogger("bm25s").setLevel(logging.WARNING)

FILE_FORMAT = "axiom-bm25"
FILE_VERSION = 1
_CHUNK_FIELDS = tuple(field.name for field in fields(Chunk))

# The usual BM25 parameters (Lucene's idf, which is never negative, unlike BM25Okapi's).
K1 = 1.5
B = 0.75


@dataclass(frozen=True, slots=True)
class _Entry:
    chunk: Chunk
    terms: list[str]


class _ChatIndex:
    """The chunks of one chat and the BM25 engine over them. Not thread-safe: its chat's lock guards it."""

    def __init__(self, entries: Iterable[_Entry] = (), *, readable: bool = True) -> None:
        self._entries: dict[str, _Entry] = {entry.chunk.chunk_id: entry for entry in entries}
        # False while the chat's file cannot be read: its chunks are unknown, so search cannot say "no match".
        self._readable = readable
        self._rebuild()

    @property
    def entries(self) -> Iterable[_Entry]:
        return self._entries.values()

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, entries: Iterable[_Entry]) -> None:
        for entry in entries:
            self._entries[entry.chunk.chunk_id] = entry
        self._readable = True  # the save that follows replaces the unreadable file with exactly these entries
        self._rebuild()

    def remove_document(self, document_id: str) -> int:
        doomed = [
            chunk_id for chunk_id, entry in self._entries.items() if entry.chunk.document_id == document_id
        ]
        for chunk_id in doomed:
            del self._entries[chunk_id]
        if doomed:
            self._rebuild()
        return len(doomed)

    def search(self, terms: list[str], k: int) -> list[ScoredChunk]:
        if not self._searchable(terms, k):
            return []
        scores = self._child_engine.get_scores(terms)
        return [ScoredChunk(chunk=self._ranked_chunks[i], score=float(scores[i])) for i in _best(scores, k)]

    def search_parents(self, terms: list[str], k: int) -> list[ScoredChunk]:
        """The ``k`` best parents, each as its best child by child BM25 (a parent's terms are its children's, so
        one matches) carrying the parent's score: the hit is expanded and reranked like any child."""
        if not self._searchable(terms, k):
            return []
        parent_scores = self._parent_engine.get_scores(terms)
        child_scores = self._child_engine.get_scores(terms)
        hits = []
        for parent in _best(parent_scores, k):
            children = self._children_of_parent[parent]
            best_child = children[int(np.argmax(child_scores[children]))]
            hits.append(ScoredChunk(chunk=self._ranked_chunks[best_child], score=float(parent_scores[parent])))
        return hits

    def _searchable(self, terms: list[str], k: int) -> bool:
        if not self._readable:
            raise RetrievalFailed("This chat's keyword index could not be read from disk.")
        return self._child_engine is not None and bool(terms) and k > 0

    def _rebuild(self) -> None:
        self._ranked_chunks = [entry.chunk for entry in self._entries.values()]
        corpus = [entry.terms for entry in self._entries.values()]
        # bm25s cannot index a corpus without a single term; such a chat has nothing to find anyway.
        if not any(corpus):
            self._child_engine = self._parent_engine = None
            return
        self._child_engine = _engine(corpus)
        children: dict[str, list[int]] = {}
        for row, chunk in enumerate(self._ranked_chunks):
            children.setdefault(chunk.parent_id, []).append(row)
        self._children_of_parent = [np.array(rows) for rows in children.values()]
        self._parent_engine = _engine([[t for row in rows for t in corpus[row]] for rows in children.values()])


def _engine(corpus: list[list[str]]) -> bm25s.BM25:
    engine = bm25s.BM25(k1=K1, b=B)
    engine.index(corpus, show_progress=False)
    return engine


def _best(scores: np.ndarray, k: int) -> np.ndarray:
    """Rows of the ``k`` highest positive scores, best first (ties in row order)."""
    candidates = np.flatnonzero(scores > 0)
    if len(candidates) > k:
        candidates = candidates[np.argpartition(-scores[candidates], k - 1)[:k]]
    return candidates[np.argsort(-scores[candidates], kind="stable")]


class BM25Store:
    """One BM25 index per chat under ``index_dir``; see the module docstring for the file format and failures.

    Thread-safe: each chat has its own lock, so work on one chat never waits for another.
    """

    def __init__(self, index_dir: Path, tokenizer: Tokenizer) -> None:
        self._index_dir = index_dir
        self._tokenizer = tokenizer
        self._registry_lock = threading.Lock()
        self._chat_locks: dict[str, threading.Lock] = {}
        self._loaded: dict[str, _ChatIndex] = {}

    def add(self, chat_id: str, chunks: Sequence[Chunk]) -> None:
        """Index ``chunks``; a chunk whose id is already indexed replaces the old one."""
        if not chunks:
            return
        name = collection_name(chat_id)
        entries = [_Entry(chunk, self._tokenizer.tokenize(chunk.text)) for chunk in chunks]
        with self._lock(name):
            index = self._index(name)
            index.add(entries)
            self._save_or_forget(name, index)

    def delete_document(self, chat_id: str, document_id: str) -> int:
        """Remove every chunk of ``document_id``; returns how many were removed."""
        name = collection_name(chat_id)
        with self._lock(name):
            index = self._index(name)
            removed = index.remove_document(document_id)
            if removed:
                self._save_or_forget(name, index)
            return removed

    def delete_chat(self, chat_id: str) -> None:
        name = collection_name(chat_id)
        with self._lock(name):
            self._path(name).unlink(missing_ok=True)
            self._loaded.pop(name, None)

    def search(self, chat_id: str, query: str, k: int) -> list[ScoredChunk]:
        """The ``k`` best chunks by raw BM25 score, best first; chunks with no query term are left out."""
        name = collection_name(chat_id)
        terms = self._tokenizer.tokenize(query)
        with self._lock(name):
            return self._index(name).search(terms, k)

    def search_parents(self, chat_id: str, query: str, k: int) -> list[ScoredChunk]:
        """The ``k`` best parents by BM25 over their whole text, best first, each represented by its best child
        (see ``_ChatIndex.search_parents``); parents with no query term are left out."""
        name = collection_name(chat_id)
        terms = self._tokenizer.tokenize(query)
        with self._lock(name):
            return self._index(name).search_parents(terms, k)

    def count(self, chat_id: str) -> int:
        name = collection_name(chat_id)
        with self._lock(name):
            return len(self._index(name))

    def document_ids(self, chat_id: str) -> set[str]:
        name = collection_name(chat_id)
        with self._lock(name):
            return {entry.chunk.document_id for entry in self._index(name).entries}

    def _lock(self, name: str) -> threading.Lock:
        with self._registry_lock:
            return self._chat_locks.setdefault(name, threading.Lock())

    def _path(self, name: str) -> Path:
        return self._index_dir / f"{name}.jsonl"

    def _index(self, name: str) -> _ChatIndex:
        """The chat's index, read from disk on first use. Caller holds the chat's lock."""
        index = self._loaded.get(name)
        if index is None:
            index = self._loaded[name] = self._load(name)
        return index

    def _load(self, name: str) -> _ChatIndex:
        path = self._path(name)
        try:
            entries = self._read(path)
        except (OSError, UnicodeDecodeError, StopIteration, ValueError, KeyError, TypeError, AttributeError):
            logger.exception(
                "BM25 index %s is unreadable; keyword search in this chat fails until a document is added",
                path,
            )
            return _ChatIndex(readable=False)
        return _ChatIndex(entries)

    def _read(self, path: Path) -> list[_Entry]:
        if not path.exists():
            return []
        with path.open(encoding="utf-8") as lines:
            header = json.loads(next(lines))
            if header.get("format") != FILE_FORMAT or header.get("version") != FILE_VERSION:
                raise ValueError(f"not a version {FILE_VERSION} {FILE_FORMAT} file: {header!r}")
            stale_terms = header.get("tokenizer") != self._tokenizer.signature
            return [self._entry_from_record(json.loads(line), stale_terms) for line in lines]

    def _entry_from_record(self, record: dict, stale_terms: bool) -> _Entry:
        # A field added later (ocr) is absent from older files: its default stands.
        chunk = Chunk(**{field: record[field] for field in _CHUNK_FIELDS if field in record})
        if stale_terms:
            return _Entry(chunk, self._tokenizer.tokenize(chunk.text))
        if not isinstance(record["terms"], str):
            raise TypeError(f"chunk {chunk.chunk_id!r} has malformed terms")
        return _Entry(chunk, record["terms"].split())

    def _save_or_forget(self, name: str, index: _ChatIndex) -> None:
        try:
            self._save(name, index)
        except BaseException:
            # Memory must never run ahead of disk: drop the changed index; next use re-reads the last save.
            self._loaded.pop(name, None)
            raise

    def _save(self, name: str, index: _ChatIndex) -> None:
        path = self._path(name)
        if not len(index):
            path.unlink(missing_ok=True)
            return
        self._index_dir.mkdir(parents=True, exist_ok=True)
        header = {"format": FILE_FORMAT, "version": FILE_VERSION, "tokenizer": self._tokenizer.signature}
        descriptor, temporary = tempfile.mkstemp(dir=self._index_dir, prefix=f".{name}.", suffix=".tmp")
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                out.write(json.dumps(header) + "\n")
                for entry in index.entries:
                    record = {field: getattr(entry.chunk, field) for field in _CHUNK_FIELDS}
                    record["terms"] = " ".join(entry.terms)
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

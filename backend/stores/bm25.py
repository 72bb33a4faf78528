"""Per-chat BM25 keyword index: a cache derived from the chunk texts in the database, one per replica.

The truth is the ``chunks`` table (written with each document's 'ready' row, removed with the document) and the
chat's version token, which changes in the same transactions (``DocumentStore``). Each search reads the token
(one primary-key lookup); when it differs from the cached index's, the index is rebuilt from the database under
the chat's lock, so concurrent searches rebuild once, and a replica sees another replica's upload or delete at
its next search. A rebuild re-tokenizes only chunks it did not hold before. The cache is kept in memory and as
one JSON-lines file per chat under ``cache_dir``, so a restarted replica skips tokenizing.

Two engines per chat: one over child chunks, one over parents (a parent's terms are its children's terms, in
reading order). Parent-level BM25 sees all of a passage's terms at once, which a ~400-char child cannot: on
SciFact's train split it ranks 0.695 nDCG@10 vs 0.645 for children (docs/benchmarks.md). Deriving it from the
children keeps one cache and one delete path: the parent engine can never hold a chunk the child engine does
not. Child overlap repeats ~50 characters per boundary in the parent's terms; measured, that changes nothing
(0.6955 vs 0.6951 from the parent's own text).

Engine: bm25s (a sparse matrix of precomputed scores), chosen over rank-bm25 by bench/bm25.py: the same
nDCG@10 on SciFact, queries ~0.1 ms instead of ~100 ms at 10k chunks. The matrix is never stored: it is
rebuilt from the terms whenever the version changes (bench/replicas.py measures a rebuild at 10k chunks).

File format (``<cache_dir>/chat_<id>.jsonl``): a header line ``{"format", "version", "tokenizer",
"chat_version"}``, then one line per chunk with the Chunk fields and its ``terms`` space-separated (a term never
contains whitespace, and one string per chunk reads several times faster than a JSON list). A file with another
header (older chat version, tokenizer or format) or that cannot be read is ignored and rewritten; one that
cannot be written is logged and costs only a rebuild at the next start. Every save writes a temporary file and
``os.replace``s it. A database that cannot be read fails the search with RetrievalFailed (hybrid retrieval then
relies on dense retrieval alone).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Protocol

import bm25s
import numpy as np
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from backend.errors import RetrievalFailed
from backend.ids import COLLECTION_PREFIX, collection_name
from backend.models import Chunk, ScoredChunk
from backend.retrieval.tokenize import Tokenizer

logger = logging.getLogger(__name__)
# bm25s sets its own logger to DEBUG when imported, so every index build printed "Building index from tokens"
# through whatever handler the application has (the CLI's, uvicorn's): keep only its warnings.
logging.getLogger("bm25s").setLevel(logging.WARNING)

FILE_FORMAT = "axiom-bm25"
FILE_VERSION = 3  # 2: a cache of the database's chunks, labelled with the chat's version; 3: with page labels
_CHUNK_FIELDS = tuple(field.name for field in fields(Chunk))
# What a chunk record of a version 1 file (the truth before the chunks table) may hold; ``ocr`` came late.
_V1_FIELDS = ("chunk_id", "parent_id", "document_id", "filename", "page", "text", "ocr")

# In ``cache_dir`` once its files of a release before the chunks table were copied: later starts skip listing it.
LEGACY_IMPORTED_MARKER = ".earlier-release-imported"

# The usual BM25 parameters (Lucene's idf, which is never negative, unlike BM25Okapi's).
K1 = 1.5
B = 0.75


@dataclass(frozen=True, slots=True)
class _Entry:
    chunk: Chunk
    terms: list[str]


class _ChatIndex:
    """The chunks of one chat at one version and the BM25 engines over them. Immutable once built."""

    def __init__(self, version: str | None, entries: Iterable[_Entry] = ()) -> None:
        self.version = version
        self._entries: dict[str, _Entry] = {entry.chunk.chunk_id: entry for entry in entries}
        self._build()

    @property
    def entries(self) -> Iterable[_Entry]:
        return self._entries.values()

    def terms_of(self, chunk_id: str) -> list[str] | None:
        entry = self._entries.get(chunk_id)
        return entry.terms if entry is not None else None

    def __len__(self) -> int:
        return len(self._entries)

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
        return self._child_engine is not None and bool(terms) and k > 0

    def _build(self) -> None:
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


class ChunkSource(Protocol):
    """Where the truth is: the chat's chunks and a token that changes with them (``DocumentStore``)."""

    def version(self, chat_id: str) -> str | None: ...

    def chunks(self, chat_id: str) -> list[Chunk]: ...

    def import_chunks(self, chunks: Sequence[Chunk]) -> int: ...


class BM25Store:
    """One BM25 index per chat, derived from ``source`` and cached in memory and under ``cache_dir``; see the
    module docstring.

    Thread-safe: each chat has its own lock, so work on one chat never waits for another, and searches that find
    the cache stale together rebuild it once.
    """

    def __init__(self, cache_dir: Path, tokenizer: Tokenizer, source: ChunkSource) -> None:
        self._cache_dir = cache_dir
        self._tokenizer = tokenizer
        self._source = source
        self._registry_lock = threading.Lock()
        self._chat_locks: dict[str, threading.Lock] = {}
        self._loaded: dict[str, _ChatIndex] = {}

    def import_legacy_files(self) -> int:
        """Copies the chunks in the BM25 files of releases before the chunks table (format version 1, the truth
        then) into the database, for ready documents that have none there, and removes the files; returns how
        many chunks were copied. Run at start-up: the first replica to start on an upgraded data dir does it.

        Only once per ``cache_dir``: a marker file then says it is done (no release since writes such files), so
        a start does not list and read every chat's cache file. A file that could not be read stays, logged, and
        no marker is written, so the next start tries it again (its documents have no keyword search until then)."""
        marker = self._cache_dir / LEGACY_IMPORTED_MARKER
        if marker.exists():
            return 0
        imported = 0
        unreadable = False
        for path in sorted(self._cache_dir.glob("chat_*.jsonl")) if self._cache_dir.is_dir() else []:
            header = self._read_header(path)
            if header is None or header.get("format") != FILE_FORMAT or header.get("version") != 1:
                continue
            try:
                with path.open(encoding="utf-8") as lines:
                    next(lines)
                    records = [json.loads(line) for line in lines]
                chunks = [Chunk(**{name: record[name] for name in _V1_FIELDS if name in record}) for record in records]
            except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
                logger.exception("BM25 file %s of an earlier release is unreadable; its chunks were not copied", path)
                unreadable = True
                continue
            try:
                imported += self._source.import_chunks(chunks)
            except IntegrityError:  # another replica starting at the same time copied them first
                logger.info("The chunks of %s were copied by another replica", path)
                continue
            path.unlink()
        if imported:
            logger.info("Copied %d chunks from the BM25 files of an earlier release into the database", imported)
        if unreadable:
            return imported
        try:
            self._cache_dir.mkdir(parents=True, exist_ok=True)
            marker.write_text("The BM25 files of releases before the chunks table were copied into the database.\n")
        except OSError:
            logger.warning("%s could not be written: the next start looks for old BM25 files again", marker)
        return imported

    def refresh(self, chat_id: str) -> None:
        """Brings the chat's cache up to date now (after an upload, so its first question does not wait)."""
        self._current(chat_id)

    def delete_chat(self, chat_id: str) -> None:
        """Drops this replica's cache of the chat (the chunks themselves go with their documents)."""
        name = collection_name(chat_id)
        with self._lock(name):
            self._path(name).unlink(missing_ok=True)
            self._loaded.pop(name, None)

    def cached_chats(self) -> list[str]:
        """The chats this replica holds a cache of, in memory or on disk, sorted."""
        names = set(self._loaded) | {path.stem for path in self._cache_dir.glob(f"{COLLECTION_PREFIX}*.jsonl")}
        return sorted(name.removeprefix(COLLECTION_PREFIX) for name in names)

    def forget_chats_except(self, chat_ids: Container[str]) -> list[str]:
        """Drops this replica's cache (index and file) of every other chat; returns their ids. Given the chats that
        hold documents, it drops those deleted or emptied through another replica, which no search would (a deleted
        chat is not searched). One that gains its first document meanwhile merely rebuilds at its next search."""
        dropped = [chat_id for chat_id in self.cached_chats() if chat_id not in chat_ids]
        for chat_id in dropped:
            self.delete_chat(chat_id)
        return dropped

    def search(self, chat_id: str, query: str, k: int) -> list[ScoredChunk]:
        """The ``k`` best chunks by raw BM25 score, best first; chunks with no query term are left out."""
        return self._current(chat_id).search(self._tokenizer.tokenize(query), k)

    def search_parents(self, chat_id: str, query: str, k: int) -> list[ScoredChunk]:
        """The ``k`` best parents by BM25 over their whole text, best first, each represented by its best child
        (see ``_ChatIndex.search_parents``); parents with no query term are left out."""
        return self._current(chat_id).search_parents(self._tokenizer.tokenize(query), k)

    def count(self, chat_id: str) -> int:
        return len(self._current(chat_id))

    def document_ids(self, chat_id: str) -> set[str]:
        return {entry.chunk.document_id for entry in self._current(chat_id).entries}

    def _lock(self, name: str) -> threading.Lock:
        with self._registry_lock:
            return self._chat_locks.setdefault(name, threading.Lock())

    def _path(self, name: str) -> Path:
        return self._cache_dir / f"{name}.jsonl"

    def _current(self, chat_id: str) -> _ChatIndex:
        """The chat's index at the source's current version: from memory, else the cache file, else rebuilt."""
        name = collection_name(chat_id)
        # Read before the chunks: if a write lands in between, the index is labelled older than what it holds, and
        # the next search merely rebuilds once more. A current index is returned without the chat's lock (a built
        # index never changes), so searches of one chat do not queue behind each other's version reads.
        version = self._version(chat_id)
        index = self._loaded.get(name)
        if index is not None and index.version == version:
            return index
        with self._lock(name):
            index = self._loaded.get(name)  # another search may have rebuilt it meanwhile
            if index is not None and index.version == version:
                return index
            cached = self._read(name, version)
            if cached is None:
                try:
                    index = self._rebuild(chat_id, version, index)
                except SQLAlchemyError as error:
                    raise _unreadable() from error
                self._save_quietly(name, index)
            else:
                index = cached
            self._loaded[name] = index
            return index

    def _version(self, chat_id: str) -> str | None:
        try:
            return self._source.version(chat_id)
        except SQLAlchemyError as error:
            raise _unreadable() from error

    def _rebuild(self, chat_id: str, version: str | None, previous: _ChatIndex | None) -> _ChatIndex:
        """From the source's chunks; a chunk already in ``previous`` keeps its terms (a chunk id's text never
        changes), so after one upload only the new document is tokenized."""
        entries = []
        for chunk in self._source.chunks(chat_id):
            terms = previous.terms_of(chunk.chunk_id) if previous is not None else None
            entries.append(_Entry(chunk, terms if terms is not None else self._tokenizer.tokenize(chunk.text)))
        return _ChatIndex(version, entries)

    def _read(self, name: str, version: str | None) -> _ChatIndex | None:
        """The cache file, if it holds ``version`` made by this tokenizer; None otherwise (or if unreadable)."""
        path = self._path(name)
        if version is None or not path.exists():
            return None
        try:
            with path.open(encoding="utf-8") as lines:
                header = json.loads(next(lines))
                if header != self._header(version):
                    return None
                return _ChatIndex(version, [_entry_from_record(json.loads(line)) for line in lines])
        except (OSError, UnicodeDecodeError, StopIteration, ValueError, KeyError, TypeError, AttributeError):
            logger.warning("BM25 cache %s is unreadable; rebuilding it from the database", path, exc_info=True)
            return None

    def _header(self, version: str) -> dict:
        return {
            "format": FILE_FORMAT, "version": FILE_VERSION, "tokenizer": self._tokenizer.signature,
            "chat_version": version,
        }

    def _save_quietly(self, name: str, index: _ChatIndex) -> None:
        """A cache that cannot be written costs a rebuild at the next start, never a search; an empty chat keeps none."""
        path = self._path(name)
        if not len(index):
            path.unlink(missing_ok=True)
            return
        try:
            self._save(path, index)
        except OSError:
            logger.warning("BM25 cache %s could not be written", path, exc_info=True)

    @staticmethod
    def _read_header(path: Path) -> dict | None:
        try:
            with path.open(encoding="utf-8") as lines:
                return json.loads(next(lines))
        except (OSError, UnicodeDecodeError, StopIteration, ValueError):
            return None

    def _save(self, path: Path, index: _ChatIndex) -> None:
        self._cache_dir.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=self._cache_dir, prefix=f".{path.stem}.", suffix=".tmp")
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                out.write(json.dumps(self._header(index.version)) + "\n")
                for entry in index.entries:
                    record = {field: getattr(entry.chunk, field) for field in _CHUNK_FIELDS}
                    record["terms"] = " ".join(entry.terms)
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def _entry_from_record(record: dict) -> _Entry:
    chunk = Chunk(**{field: record[field] for field in _CHUNK_FIELDS})
    if not isinstance(record["terms"], str):
        raise TypeError(f"chunk {chunk.chunk_id!r} has malformed terms")
    return _Entry(chunk, record["terms"].split())


def _unreadable() -> RetrievalFailed:
    return RetrievalFailed("This chat's keyword index could not be read from the database.")

"""Dense vectors of child chunks, one Chroma collection per chat (ADR-007: a chat only ever searches its own
documents).

Embeddings are always computed by us and passed in: collections are opened with ``embedding_function=None``
because Chroma's default embedding function downloads a model, which this offline service must never do.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ParamSpec, TypeVar

import chromadb
import httpx
import numpy as np
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.config import Settings as ChromaSettings
from chromadb.errors import NotFoundError
from numpy.typing import ArrayLike

from backend.config import Settings
from backend.errors import VectorStoreUnreachable
from backend.ids import COLLECTION_PREFIX, collection_name
from backend.models import Chunk, ScoredChunk

_COSINE = {"hnsw": {"space": "cosine"}}

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _unreachable(error: Exception, *, address: str | None = None) -> VectorStoreUnreachable:
    cause = str(error) or type(error).__name__
    if address is None:
        return VectorStoreUnreachable(
            "The vector store (Chroma) is unreachable; check that the Chroma server is running and "
            "reachable.",
            cause=cause,
        )
    # At start-up: the operator's settings name the server.
    return VectorStoreUnreachable(
        f"The Chroma server at {address} is unreachable ({cause}). Check AXIOM_CHROMA_HOST, "
        "AXIOM_CHROMA_PORT and that the server is running.", cause=cause, address=address,
    )


def _unreachable_as_retrieval_failed(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Turns a lost connection to a Chroma server into a 503 a client can act on, instead of a raw httpx error."""

    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(*args, **kwargs)
        except httpx.TransportError as error:
            raise _unreachable(error) from error

    return wrapper


def limit_request_time(client: ClientAPI, timeout_seconds: float) -> None:
    """Makes every request of a Chroma server client fail with an httpx timeout after ``timeout_seconds``.

    chromadb (1.5.9) sends requests through ``httpx.Client(timeout=None)`` and has no setting for it, so a frozen
    server would hang a request forever. Its private session is the only handle: a subclass of its HTTP API named
    in ``chroma_api_impl`` is not an option, because ``chromadb.HttpClient`` overwrites that setting and chromadb
    refuses implementations it does not know. Should chromadb move the session, start-up stops here instead of
    running without a timeout.
    """
    session = getattr(getattr(client, "_server", None), "_session", None)
    if not isinstance(session, httpx.Client):
        raise RuntimeError(  # noqa: TRY004 - not a caller's mistake: the installed chromadb is incompatible
            f"chromadb {chromadb.__version__} no longer keeps its HTTP session at client._server._session, so "
            "AXIOM_CHROMA_TIMEOUT_SECONDS cannot be applied and a frozen Chroma server would hang requests forever. "
            "Update limit_request_time in backend/stores/chroma.py for this chromadb version."
        )
    session.timeout = httpx.Timeout(timeout_seconds)


def check_server(address: str, timeout_seconds: float) -> None:
    """Raises VectorStoreUnreachable unless the Chroma server at ``address`` (host:port) answers its heartbeat
    within ``timeout_seconds``."""
    try:
        httpx.get(f"http://{address}/api/v2/heartbeat", timeout=timeout_seconds).raise_for_status()
    except httpx.HTTPError as error:
        raise _unreachable(error, address=address) from error


def _chunk_metadata(chunk: Chunk, position: int) -> dict[str, str | int | bool]:
    # position (the chunk's index in reading order) is kept because chunk ids do not sort numerically.
    return {
        "chunk_id": chunk.chunk_id,
        "parent_id": chunk.parent_id,
        "document_id": chunk.document_id,
        "filename": chunk.filename,
        "page": chunk.page,
        "position": position,
        "ocr": chunk.ocr,
        "label": chunk.label,
    }


def _chunk_from_record(text: str, metadata: dict[str, Any]) -> Chunk:
    return Chunk(
        chunk_id=str(metadata["chunk_id"]),
        parent_id=str(metadata["parent_id"]),
        document_id=str(metadata["document_id"]),
        filename=str(metadata["filename"]),
        page=int(metadata["page"]),
        text=text,
        ocr=bool(metadata.get("ocr", False)),  # absent in collections written before OCR
        label=str(metadata.get("label", "")),  # absent in collections written before page labels
    )


def _reading_order(metadata: dict[str, Any]) -> tuple[str, str, int, int]:
    return (
        str(metadata["filename"]),
        str(metadata["document_id"]),
        int(metadata["page"]),
        int(metadata["position"]),
    )


class ChromaStore:
    """Embedded (a directory) or client-server Chroma, chosen by the client handed in."""

    def __init__(self, client: ClientAPI, *, is_server: bool = False) -> None:
        self._client = client
        self.is_server = is_server

    @classmethod
    def from_settings(cls, settings: Settings) -> ChromaStore:
        chroma_settings = ChromaSettings(anonymized_telemetry=False)
        if settings.chroma_host is None:
            return cls(chromadb.PersistentClient(path=settings.chroma_path, settings=chroma_settings))
        address = f"{settings.chroma_host}:{settings.chroma_port}"
        # chromadb asks the server for its tenant before it hands back a client whose requests can be limited, so
        # a server frozen at start-up would hang start-up: a bounded heartbeat of our own goes first.
        check_server(address, settings.chroma_timeout_seconds)
        try:
            client = chromadb.HttpClient(
                host=settings.chroma_host, port=settings.chroma_port, settings=chroma_settings
            )
        except ValueError as error:  # chromadb reports a server it cannot connect to as a ValueError
            raise _unreachable(error, address=address) from error
        limit_request_time(client, settings.chroma_timeout_seconds)
        return cls(client, is_server=True)

    def close(self) -> None:
        self._client.close()

    def is_reachable(self) -> bool:
        """A server is reachable when it answers a heartbeat within the request timeout; an embedded store runs
        in this process and always is."""
        if not self.is_server:
            return True
        try:
            self._client.heartbeat()
        except httpx.TransportError:
            return False
        return True

    @_unreachable_as_retrieval_failed
    def add(self, chat_id: str, chunks: Sequence[Chunk], embeddings: ArrayLike) -> None:
        """Index one document's chunks, given in reading order. Upserts, so retrying a failed ingest is safe."""
        if not chunks:
            return
        vectors = np.asarray(embeddings, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(chunks):
            raise ValueError(
                f"Expected one embedding row per chunk ({len(chunks)}), got shape {vectors.shape}."
            )
        collection = self._client.get_or_create_collection(
            collection_name(chat_id), configuration=_COSINE, embedding_function=None
        )
        batch_size = self._client.get_max_batch_size()
        for start in range(0, len(chunks), batch_size):
            batch = chunks[start : start + batch_size]
            collection.upsert(
                ids=[chunk.chunk_id for chunk in batch],
                embeddings=vectors[start : start + batch_size],
                documents=[chunk.text for chunk in batch],
                metadatas=[_chunk_metadata(chunk, start + offset) for offset, chunk in enumerate(batch)],
            )

    @_unreachable_as_retrieval_failed
    def query(self, chat_id: str, embedding: ArrayLike, k: int) -> list[ScoredChunk]:
        """The k chunks nearest to ``embedding``, best first; score is cosine similarity (1 - cosine distance)."""
        collection = self._existing_collection(chat_id)
        if collection is None:
            return []
        result = collection.query(
            query_embeddings=np.asarray(embedding, dtype=np.float32).reshape(1, -1),
            n_results=k,
            include=["documents", "metadatas", "distances"],
        )
        texts, metadatas, distances = result["documents"][0], result["metadatas"][0], result["distances"][0]
        return [
            ScoredChunk(_chunk_from_record(text, dict(metadata)), 1.0 - float(distance))
            for text, metadata, distance in zip(texts, metadatas, distances, strict=True)
        ]

    @_unreachable_as_retrieval_failed
    def delete_document(self, chat_id: str, document_id: str) -> None:
        collection = self._existing_collection(chat_id)
        if collection is not None:
            try:
                collection.delete(where={"document_id": document_id})
            except NotFoundError:
                pass  # the chat was deleted meanwhile (through another replica): its vectors went with it

    @_unreachable_as_retrieval_failed
    def delete_chat(self, chat_id: str) -> None:
        try:
            self._client.delete_collection(collection_name(chat_id))
        except NotFoundError:
            pass  # already gone: deleting a chat is idempotent

    @_unreachable_as_retrieval_failed
    def delete_chat_if_empty(self, chat_id: str) -> None:
        """Deletes the chat's collection if it holds nothing: one that a write racing the chat's deletion made
        again, then rolled back."""
        collection = self._existing_collection(chat_id)
        if collection is not None and collection.count() == 0:
            self.delete_chat(chat_id)

    @_unreachable_as_retrieval_failed
    def count(self, chat_id: str) -> int:
        collection = self._existing_collection(chat_id)
        return 0 if collection is None else collection.count()

    @_unreachable_as_retrieval_failed
    def document_ids(self, chat_id: str) -> set[str]:
        collection = self._existing_collection(chat_id)
        if collection is None:
            return set()
        metadatas = collection.get(include=["metadatas"])["metadatas"]
        return {str(metadata["document_id"]) for metadata in metadatas}

    @_unreachable_as_retrieval_failed
    def documents_other_than(self, chat_id: str, known: Iterable[str], limit: int) -> set[str]:
        """The ids of documents with vectors in the chat's collection that are not among ``known``, read from at
        most ``limit`` of their chunks: a metadata filter, so the collection's other vectors are not read. Chroma
        spells ``known`` as one SQL variable each, of which SQLite allows 32766: keep it below that."""
        collection = self._existing_collection(chat_id)
        if collection is None:
            return set()
        excluded = sorted(known)
        where = {"document_id": {"$nin": excluded}} if excluded else None
        try:
            metadatas = collection.get(where=where, limit=limit, include=["metadatas"])["metadatas"]
        except NotFoundError:
            return set()  # the chat was deleted meanwhile (through another replica)
        return {str(metadata["document_id"]) for metadata in metadatas}

    @_unreachable_as_retrieval_failed
    def chats_page(self, offset: int, limit: int) -> tuple[list[str], int]:
        """The chats of up to ``limit`` collections from the ``offset``-th on (in Chroma's order), and where the
        next page starts: 0 after the last."""
        collections = self._client.list_collections(limit=limit, offset=offset)
        chats = [c.name.removeprefix(COLLECTION_PREFIX) for c in collections if c.name.startswith(COLLECTION_PREFIX)]
        return chats, offset + limit if len(collections) == limit else 0

    @_unreachable_as_retrieval_failed
    def get_chunks(self, chat_id: str, document_id: str | None = None) -> list[Chunk]:
        """All chunks of a chat, or of one of its documents, in reading order (by file, then page)."""
        collection = self._existing_collection(chat_id)
        if collection is None:
            return []
        where = None if document_id is None else {"document_id": document_id}
        result = collection.get(where=where, include=["documents", "metadatas"])
        records = sorted(
            zip(result["documents"], result["metadatas"], strict=True), key=lambda r: _reading_order(r[1])
        )
        return [_chunk_from_record(text, dict(metadata)) for text, metadata in records]

    @_unreachable_as_retrieval_failed
    def has_collection(self, chat_id: str) -> bool:
        """Whether the chat has a collection at all (empty or not): deleting a chat must not leave one behind."""
        return self._existing_collection(chat_id) is not None

    def _existing_collection(self, chat_id: str) -> Collection | None:
        # Reads never create a collection, so asking about an unknown chat leaves nothing behind.
        try:
            return self._client.get_collection(collection_name(chat_id), embedding_function=None)
        except NotFoundError:
            return None

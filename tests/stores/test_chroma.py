"""The per-chat Chroma store against real Chroma: embedded (a directory) and a real `chroma run` server.

Every behaviour test runs twice, once per mode. Embeddings are hand-made or fixed-seed random unit vectors:
what is under test is storage, isolation and ranking, not the embedding model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import chromadb
import numpy as np
import pytest
from chromadb.api import ClientAPI
from chromadb.config import Settings as ChromaSettings

from backend.config import Settings
from backend.errors import RetrievalFailed, ValidationFailed
from backend.ids import collection_name
from backend.models import Chunk
from backend.stores.chroma import ChromaStore, limit_request_time
from tests.llm.support import free_port
from tests.support.chroma_server import ChromaServer, start_chroma_server
from tests.support.waiting import wait_for

DIMENSIONS = 384


# ---------------------------------------------------------------------------------------------------------------
# A real Chroma server


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    server = start_chroma_server(tmp_path_factory.mktemp("chroma-server"))
    print(f"\nchroma server answered its heartbeat after {server.start_seconds:.2f}s")
    yield server
    server.stop()


# ---------------------------------------------------------------------------------------------------------------
# The two modes behind one interface


@dataclass
class Backend:
    """Opens stores on one Chroma (a directory or a server) and can list its raw collections."""

    settings: Settings
    opened: list[ChromaStore] = field(default_factory=list)

    def open_store(self) -> ChromaStore:
        store = ChromaStore.from_settings(self.settings)
        self.opened.append(store)
        return store

    def raw_client(self) -> ClientAPI:
        """A client beside the store's; use it in a ``with`` block so it does not keep the embedded store open."""
        chroma_settings = ChromaSettings(anonymized_telemetry=False)
        if self.settings.chroma_host is None:
            return chromadb.PersistentClient(path=self.settings.chroma_path, settings=chroma_settings)
        return chromadb.HttpClient(
            host=self.settings.chroma_host, port=self.settings.chroma_port, settings=chroma_settings
        )

    def collection_names(self) -> set[str]:
        with self.raw_client() as client:
            return {collection.name for collection in client.list_collections()}

    def wipe(self) -> None:
        with self.raw_client() as client:
            for collection in client.list_collections():
                client.delete_collection(collection.name)


@pytest.fixture(params=["embedded", "server"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "embedded":
        # Explicit values, so an AXIOM_CHROMA_* variable in the environment cannot redirect the test.
        backend = Backend(Settings(chroma_path=tmp_path / "chroma", chroma_host=None))
    else:
        backend = Backend(request.getfixturevalue("chroma_server").settings())
    yield backend
    if request.param == "server":
        backend.wipe()  # the server outlives the test; the next test starts from an empty Chroma
    for store in backend.opened:
        store.close()


@pytest.fixture
def store(backend: Backend) -> ChromaStore:
    return backend.open_store()


# ---------------------------------------------------------------------------------------------------------------
# Data


def document_chunks(document_id: str, filename: str, count: int, chunks_per_page: int = 4) -> list[Chunk]:
    """Chunks in reading order, two per parent, so ids like '-p10-' sort before '-p2-' as strings."""
    return [
        Chunk(
            chunk_id=f"{document_id}-p{index // 2}-c{index % 2}",
            parent_id=f"{document_id}-p{index // 2}",
            document_id=document_id,
            filename=filename,
            page=1 + index // chunks_per_page,
            text=f"{filename}, passage {index}: the committee reviewed item {index} and recorded its decision.",
        )
        for index in range(count)
    ]


def unit_vectors(count: int, seed: int, dimensions: int = DIMENSIONS) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, dimensions)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def axis(index: int) -> np.ndarray:
    vector = np.zeros(DIMENSIONS, dtype=np.float32)
    vector[index] = 1.0
    return vector


def at_similarities(similarities: list[float]) -> np.ndarray:
    """Row i has cosine similarity similarities[i] to axis(0); each row's remainder lies on its own axis."""
    return np.stack([s * axis(0) + np.sqrt(1.0 - s * s) * axis(i + 1) for i, s in enumerate(similarities)])


def ids_of(hits) -> list[str]:
    return [hit.chunk.chunk_id for hit in hits]


# ---------------------------------------------------------------------------------------------------------------
# Behaviour (each runs embedded and against the server)


def test_query_ranks_by_cosine_similarity_best_first(store: ChromaStore):
    chunks = document_chunks("doc1", "report.pdf", 4)
    similarities = [0.1, 0.9, -0.3, 0.5]
    # Lengths differ wildly: a Euclidean index would rank by length, cosine must ignore it.
    embeddings = at_similarities(similarities) * np.array([[0.01], [50.0], [3.0], [0.2]], dtype=np.float32)
    store.add("alpha", chunks, embeddings)

    hits = store.query("alpha", axis(0) * 7.0, k=4)

    assert ids_of(hits) == [chunks[1].chunk_id, chunks[3].chunk_id, chunks[0].chunk_id, chunks[2].chunk_id]
    assert [hit.score for hit in hits] == pytest.approx([0.9, 0.5, 0.1, -0.3], abs=1e-4)
    assert hits[0].chunk == chunks[1]  # every field survives the round trip


def test_a_chunks_page_label_survives_and_one_stored_before_labels_has_none(backend: Backend, store: ChromaStore):
    labelled, unlabelled = document_chunks("deck", "deck.pptx", 2)
    labelled = dataclasses.replace(labelled, label="Slide 1")
    store.add("alpha", [labelled, unlabelled], unit_vectors(2, seed=3))
    with backend.raw_client() as client:  # as a release before labels wrote it: no "label" in its metadata
        collection = client.get_collection(collection_name("alpha"))
        metadata = collection.get(ids=[unlabelled.chunk_id])["metadatas"][0]
        collection.update(ids=[unlabelled.chunk_id], metadatas=[{**metadata, "label": None}])
        assert "label" not in collection.get(ids=[unlabelled.chunk_id])["metadatas"][0]

    assert store.get_chunks("alpha") == [labelled, unlabelled]
    assert unlabelled.label == ""


def test_query_returns_at_most_k_and_k_beyond_the_count_returns_everything(store: ChromaStore):
    chunks = document_chunks("doc1", "notes.txt", 6)
    store.add("alpha", chunks, unit_vectors(6, seed=1))

    assert len(store.query("alpha", unit_vectors(1, seed=2)[0], k=2)) == 2
    everything = store.query("alpha", unit_vectors(1, seed=2)[0], k=50)
    assert sorted(ids_of(everything)) == sorted(chunk.chunk_id for chunk in chunks)
    assert [hit.score for hit in everything] == sorted((hit.score for hit in everything), reverse=True)


def test_a_chat_never_sees_another_chats_chunks(store: ChromaStore):
    shared_vectors = unit_vectors(5, seed=3)  # identical vectors: only the collection can keep them apart
    alpha_chunks = document_chunks("docA", "alpha.pdf", 5)
    beta_chunks = document_chunks("docB", "beta.pdf", 5)
    store.add("alpha", alpha_chunks, shared_vectors)
    store.add("beta", beta_chunks, shared_vectors)

    for query in shared_vectors:
        assert {hit.chunk.document_id for hit in store.query("alpha", query, k=10)} == {"docA"}
        assert {hit.chunk.document_id for hit in store.query("beta", query, k=10)} == {"docB"}
    assert store.document_ids("alpha") == {"docA"}
    assert store.get_chunks("beta") == beta_chunks

    store.delete_chat("alpha")
    assert store.count("alpha") == 0
    assert store.query("alpha", shared_vectors[0], k=10) == []
    assert store.count("beta") == 5


def test_delete_document_removes_only_that_document(store: ChromaStore):
    kept = document_chunks("keep", "kept.pdf", 6)
    removed = document_chunks("drop", "dropped.pdf", 4)
    store.add("alpha", kept, unit_vectors(6, seed=4))
    store.add("alpha", removed, unit_vectors(4, seed=5))
    store.add("beta", removed, unit_vectors(4, seed=5))  # same document id in another chat must survive
    assert store.count("alpha") == 10
    assert store.document_ids("alpha") == {"keep", "drop"}

    store.delete_document("alpha", "drop")

    assert store.count("alpha") == 6
    assert store.document_ids("alpha") == {"keep"}
    assert store.get_chunks("alpha", "drop") == []
    for query in unit_vectors(4, seed=5):  # the deleted chunks' own vectors no longer find them
        assert {hit.chunk.document_id for hit in store.query("alpha", query, k=20)} == {"keep"}
    assert store.count("beta") == 4


def test_deleting_every_document_leaves_an_empty_but_queryable_chat(store: ChromaStore):
    store.add("alpha", document_chunks("doc1", "a.txt", 3), unit_vectors(3, seed=6))
    store.delete_document("alpha", "doc1")

    assert store.count("alpha") == 0
    assert store.query("alpha", unit_vectors(1, seed=6)[0], k=5) == []
    assert store.document_ids("alpha") == set()


def test_a_chats_collection_is_deleted_if_empty_only(store: ChromaStore):
    store.add("alpha", document_chunks("doc1", "a.txt", 3), unit_vectors(3, seed=6))
    store.add("beta", document_chunks("doc2", "b.txt", 3), unit_vectors(3, seed=7))
    store.delete_document("alpha", "doc1")

    store.delete_chat_if_empty("alpha")
    store.delete_chat_if_empty("beta")
    store.delete_chat_if_empty("never")

    assert not store.has_collection("alpha") and not store.has_collection("never")
    assert store.document_ids("beta") == {"doc2"}


def test_adding_the_same_chunks_again_upserts_instead_of_duplicating(store: ChromaStore):
    chunks = document_chunks("doc1", "retry.pdf", 5)
    store.add("alpha", chunks, unit_vectors(5, seed=7))
    store.add("alpha", chunks, unit_vectors(5, seed=7))
    assert store.count("alpha") == 5

    revised = [
        Chunk(c.chunk_id, c.parent_id, c.document_id, c.filename, c.page, c.text + " (revised)")
        for c in chunks
    ]
    store.add("alpha", revised, unit_vectors(5, seed=7))
    assert store.count("alpha") == 5
    assert store.get_chunks("alpha", "doc1") == revised


def test_get_chunks_returns_reading_order_per_document_and_per_chat(store: ChromaStore):
    second = document_chunks("docZ", "b-second.pdf", 24)  # parents p0..p11: string order of ids would differ
    first = document_chunks("docA", "a-first.pdf", 6)
    store.add("alpha", second, unit_vectors(24, seed=8))
    store.add("alpha", first, unit_vectors(6, seed=9))

    assert store.get_chunks("alpha", "docZ") == second
    assert store.get_chunks("alpha") == first + second
    assert store.get_chunks("alpha", "no-such-document") == []


@pytest.mark.slow  # thousands of inserts
def test_add_splits_more_chunks_than_one_chroma_batch_allows(backend: Backend, store: ChromaStore):
    with backend.raw_client() as client:
        total = client.get_max_batch_size() + 7
    chunks = document_chunks("big", "big.pdf", total, chunks_per_page=50)
    # Batching does not depend on the width of a vector; narrow ones keep this many inserts quick.
    store.add("alpha", chunks, unit_vectors(total, seed=10, dimensions=8))

    assert store.count("alpha") == total
    assert store.get_chunks("alpha")[-7:] == chunks[-7:]


def test_add_rejects_embeddings_that_do_not_match_the_chunks(backend: Backend, store: ChromaStore):
    with pytest.raises(ValueError, match="one embedding row per chunk"):
        store.add("alpha", document_chunks("doc1", "a.txt", 3), unit_vectors(2, seed=11))
    assert collection_name("alpha") not in backend.collection_names()


def test_data_survives_a_new_client(backend: Backend, store: ChromaStore):
    chunks = document_chunks("doc1", "durable.pdf", 8)
    vectors = unit_vectors(8, seed=12)
    store.add("alpha", chunks, vectors)
    store.close()  # embedded: releases the last reference, so the next store reads the directory afresh

    reopened = backend.open_store()
    assert reopened.count("alpha") == 8
    assert reopened.get_chunks("alpha") == chunks
    assert ids_of(reopened.query("alpha", vectors[3], k=1)) == [chunks[3].chunk_id]


def test_a_running_chroma_is_reachable(store: ChromaStore):
    assert store.is_reachable()


def test_an_unknown_chat_is_empty_and_reading_it_creates_nothing(backend: Backend, store: ChromaStore):
    assert store.query("ghost", unit_vectors(1, seed=13)[0], k=5) == []
    assert store.count("ghost") == 0
    assert store.document_ids("ghost") == set()
    assert store.get_chunks("ghost") == []
    store.delete_document("ghost", "doc1")
    store.delete_chat("ghost")

    assert collection_name("ghost") not in backend.collection_names()


OPERATIONS: dict[str, Callable[[ChromaStore, str], object]] = {
    "add": lambda store, chat: store.add(chat, document_chunks("d", "f.txt", 1), unit_vectors(1, seed=0)),
    "query": lambda store, chat: store.query(chat, unit_vectors(1, seed=0)[0], k=3),
    "delete_document": lambda store, chat: store.delete_document(chat, "d"),
    "delete_chat": lambda store, chat: store.delete_chat(chat),
    "count": lambda store, chat: store.count(chat),
    "document_ids": lambda store, chat: store.document_ids(chat),
    "get_chunks": lambda store, chat: store.get_chunks(chat),
}


@pytest.mark.parametrize("chat_id", ["../x", "a b", "", "x/../../etc", "-leading-dash", "trailing-dash-"])
def test_an_invalid_chat_id_is_rejected_before_reaching_chroma(
    backend: Backend, store: ChromaStore, chat_id: str
):
    for operation in OPERATIONS.values():
        with pytest.raises(ValidationFailed):
            operation(store, chat_id)
    assert backend.collection_names() == set()


# ---------------------------------------------------------------------------------------------------------------
# A Chroma server that is down (stopped: connections refused) or frozen (connections accepted, never answered)


@pytest.fixture(scope="module")
def store_of_a_stopped_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaStore]:
    server = start_chroma_server(tmp_path_factory.mktemp("chroma-stopped"))
    store = ChromaStore.from_settings(server.settings())
    store.add("alpha", document_chunks("doc1", "a.txt", 3), unit_vectors(3, seed=14))
    server.stop()
    yield store
    store.close()


@pytest.mark.timeout(30)  # a hang would otherwise block the suite; the point is a prompt, typed failure
@pytest.mark.parametrize("operation", OPERATIONS.values(), ids=OPERATIONS.keys())
def test_a_server_that_went_down_gives_retrieval_failed(store_of_a_stopped_server: ChromaStore, operation):
    with pytest.raises(RetrievalFailed, match="unreachable") as raised:
        operation(store_of_a_stopped_server, "alpha")
    assert raised.value.status == 503


@pytest.mark.timeout(30)
def test_a_server_that_went_down_is_unreachable(store_of_a_stopped_server: ChromaStore):
    assert not store_of_a_stopped_server.is_reachable()


def answered_ids(store: ChromaStore, vector) -> list[str] | None:
    """The ids of the best chunk of chat "frozen", or None while the server does not answer in time."""
    try:
        return ids_of(store.query("frozen", vector, k=1))
    except RetrievalFailed:
        return None


@pytest.mark.timeout(60)  # without the request timeout, the frozen server would hang the query until then
def test_a_frozen_server_gives_retrieval_failed_once_the_request_timeout_passes(chroma_server: ChromaServer):
    store = ChromaStore.from_settings(chroma_server.settings(chroma_timeout_seconds=1))
    chunks = document_chunks("doc1", "a.txt", 3)
    vectors = unit_vectors(3, seed=15)
    try:
        store.add("frozen", chunks, vectors)
        with chroma_server.frozen():
            with pytest.raises(RetrievalFailed, match="unreachable") as raised:
                store.query("frozen", vectors[0], k=3)
            assert not store.is_reachable()
        assert raised.value.status == 503
        # Resumed, the same store answers again: a timed-out request leaves no broken connection behind. The
        # resumed server first works off what queued while it was stopped, which on a busy machine can outlast
        # the 1 s request timeout, so the test waits for an answer instead of taking the first request's.
        answered = wait_for(lambda: answered_ids(store, vectors[0]), "the resumed server to answer", timeout=30)
        assert answered == [chunks[0].chunk_id]
    finally:
        store.delete_chat("frozen")  # the server is shared with the tests above
        store.close()


def test_a_client_without_chromadbs_http_session_is_refused_instead_of_left_unbounded(tmp_path: Path):
    embedded = chromadb.PersistentClient(path=tmp_path, settings=ChromaSettings(anonymized_telemetry=False))
    with embedded, pytest.raises(RuntimeError, match="cannot be applied"):
        limit_request_time(embedded, 1.0)


@pytest.mark.timeout(30)
def test_connecting_to_a_port_with_no_server_gives_retrieval_failed():
    port = free_port()
    with pytest.raises(RetrievalFailed, match="unreachable") as raised:
        ChromaStore.from_settings(Settings(chroma_host="127.0.0.1", chroma_port=port))
    assert raised.value.status == 503
    assert raised.value.details["address"] == f"127.0.0.1:{port}"


@pytest.mark.timeout(60)  # chromadb's own connect would wait for the frozen server until then
def test_starting_on_a_frozen_server_gives_retrieval_failed_once_the_request_timeout_passes(
    chroma_server: ChromaServer,
):
    settings = chroma_server.settings(chroma_timeout_seconds=1)
    with chroma_server.frozen(), pytest.raises(RetrievalFailed, match="unreachable") as raised:
        ChromaStore.from_settings(settings)
    assert raised.value.details["address"] == f"{chroma_server.host}:{chroma_server.port}"


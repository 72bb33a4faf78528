"""The BM25 cache on a real database (SQLite and PostgreSQL): derived from the chunks table and the chat's version,
so replicas sharing one database each see every upload and delete at their next search."""

import json
import logging
import threading
from collections import defaultdict
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from backend.errors import RetrievalFailed, ValidationFailed
from backend.models import Chunk
from backend.retrieval.tokenize import Tokenizer
from backend.stores.bm25 import LEGACY_IMPORTED_MARKER, BM25Store
from backend.stores.documents import DocumentStore, new_record


def make_chunk(document_id: str, number: int, text: str) -> Chunk:
    return Chunk(
        chunk_id=f"{document_id}-p0-c{number}",
        parent_id=f"{document_id}-p0",
        document_id=document_id,
        filename=f"{document_id}.txt",
        page=1,
        text=text,
    )


VACCINE = make_chunk(
    "immunology", 0, "Vaccines train the immune system to recognise a pathogen before infection."
)
BREAD = make_chunk("baking", 0, "Sourdough bread rises because wild yeast ferments the flour in the dough.")
ORBITS = make_chunk("astronomy", 0, "Planets follow elliptical orbits with the sun at one focus.")
TIDES = make_chunk("astronomy", 1, "Ocean tides are raised by the gravity of the moon and, less, of the sun.")
CORPUS = [VACCINE, BREAD, ORBITS, TIDES]


class CountingSource:
    """The real document store, counting how often the chunks are read (a rebuild)."""

    def __init__(self, documents: DocumentStore) -> None:
        self._documents = documents
        self.chunk_reads = 0

    def version(self, chat_id):
        return self._documents.version(chat_id)

    def chunks(self, chat_id):
        self.chunk_reads += 1
        return self._documents.chunks(chat_id)

    def import_chunks(self, chunks):
        return self._documents.import_chunks(chunks)


@pytest.fixture
def documents(database) -> DocumentStore:
    return DocumentStore(database)


def add(documents: DocumentStore, chat_id: str, chunks: list[Chunk]) -> None:
    """Stores ``chunks`` as ready documents of the chat, as ingestion does."""
    by_document = defaultdict(list)
    for chunk in chunks:
        by_document[chunk.document_id].append(chunk)
    for document_id, its_chunks in by_document.items():
        record = new_record(
            document_id=document_id, chat_id=chat_id, filename=f"{document_id}.txt", sha256=document_id,
            file_type="txt", size_bytes=1, page_count=1,
        )
        documents.begin(record)
        documents.mark_ready(record, [], its_chunks)


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    return tmp_path / "bm25_indices"


@pytest.fixture
def source(documents) -> CountingSource:
    return CountingSource(documents)


@pytest.fixture
def store(index_dir: Path, source) -> BM25Store:
    return BM25Store(index_dir, Tokenizer(), source)


def ids(results) -> list[str]:
    return [result.chunk.chunk_id for result in results]


def test_ranks_the_relevant_chunk_first(store, documents):
    add(documents, "chat1", CORPUS)
    results = store.search("chat1", "how does a vaccine train immunity against infections?", k=4)
    assert ids(results) == [VACCINE.chunk_id]
    assert results[0].chunk == VACCINE
    assert results[0].score > 0


def test_returns_best_first_only_matching_chunks_up_to_k(store, documents):
    add(documents, "chat1", CORPUS)
    results = store.search("chat1", "sun orbits", k=10)
    assert ids(results) == [ORBITS.chunk_id, TIDES.chunk_id]
    assert results[0].score > results[1].score > 0
    assert ids(store.search("chat1", "sun orbits", k=1)) == [ORBITS.chunk_id]


def test_queries_without_matching_terms_find_nothing(store, documents):
    add(documents, "chat1", CORPUS)
    assert store.search("chat1", "quantum chromodynamics", k=5) == []
    assert store.search("chat1", "the and of", k=5) == []
    assert store.search("chat1", "", k=5) == []


def test_unknown_chat_is_empty(store, index_dir):
    assert store.search("nobody", "vaccine", k=5) == []
    assert store.count("nobody") == 0
    assert store.document_ids("nobody") == set()
    assert not index_dir.exists()


def test_count_and_document_ids(store, documents):
    add(documents, "chat1", CORPUS)
    assert store.count("chat1") == 4
    assert store.document_ids("chat1") == {"immunology", "baking", "astronomy"}


def test_a_document_still_indexing_is_not_searched(store, documents):
    documents.begin(new_record(
        document_id="immunology", chat_id="chat1", filename="immunology.txt", sha256="x", file_type="txt",
        size_bytes=1, page_count=1,
    ))
    assert store.search("chat1", "vaccine", k=5) == []


def test_replicas_on_one_database_see_each_others_uploads_and_deletes(store, documents, tmp_path):
    other_replica = BM25Store(tmp_path / "other_replica", Tokenizer(), documents)
    add(documents, "chat1", [VACCINE, BREAD])
    assert ids(other_replica.search("chat1", "sourdough", k=5)) == [BREAD.chunk_id]
    assert store.count("chat1") == 2

    add(documents, "chat1", [ORBITS])  # after both caches were built
    assert ids(other_replica.search("chat1", "elliptical orbits", k=5)) == [ORBITS.chunk_id]
    documents.remove("baking")
    assert store.search("chat1", "sourdough", k=5) == [] and other_replica.search("chat1", "sourdough", k=5) == []
    assert store.document_ids("chat1") == other_replica.document_ids("chat1") == {"immunology", "astronomy"}


def test_the_cache_is_rebuilt_only_when_the_version_changes(store, documents, source):
    add(documents, "chat1", [VACCINE, BREAD])
    for _ in range(3):
        store.search("chat1", "vaccine", k=5)
    assert source.chunk_reads == 1
    add(documents, "chat1", [ORBITS])
    store.search("chat1", "vaccine", k=5)
    store.search_parents("chat1", "vaccine", k=5)
    assert source.chunk_reads == 2


def test_a_restarted_replica_reads_its_cache_file_instead_of_rebuilding(store, documents, index_dir):
    add(documents, "chat1", [VACCINE, BREAD])
    store.search("chat1", "vaccine", k=5)
    restarted_source = CountingSource(documents)
    restarted = BM25Store(index_dir, Tokenizer(), restarted_source)
    assert restarted.search("chat1", "sourdough", k=5)[0].chunk == BREAD
    assert restarted_source.chunk_reads == 0

    add(documents, "chat1", [ORBITS])  # the file is now a version behind: the database wins
    assert ids(BM25Store(index_dir, Tokenizer(), documents).search("chat1", "elliptical", k=5)) == [ORBITS.chunk_id]


def test_concurrent_searches_of_a_stale_cache_rebuild_it_once(store, documents, source):
    add(documents, "chat1", [make_chunk(f"doc{n}", part, f"topic{n} part {part}") for n in range(8) for part in range(5)])
    threads = [threading.Thread(target=store.search, args=("chat1", "topic3", 5)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert source.chunk_reads == 1 and store.count("chat1") == 40


def test_deleting_the_chat_leaves_no_cache_file(store, documents, index_dir):
    add(documents, "chat-a", [VACCINE])
    add(documents, "chat-b", [BREAD])
    assert store.count("chat-a") == 1 and store.count("chat-b") == 1
    documents.remove_chat("chat-a")
    store.delete_chat("chat-a")
    assert store.search("chat-a", "vaccine", k=10) == []
    assert [path.name for path in index_dir.iterdir()] == ["chat_chat-b.jsonl"]


def test_a_replica_drops_its_cache_of_a_chat_deleted_through_another(store, documents, tmp_path):
    """Nothing else would ever drop it (no one searches a deleted chat): its file and index stayed for good."""
    other_replica = BM25Store(tmp_path / "other_replica", Tokenizer(), documents)
    add(documents, "gone", [VACCINE])
    add(documents, "kept", [BREAD])
    assert other_replica.count("gone") == other_replica.count("kept") == 1
    documents.remove_chat("gone")  # deleted through this replica
    store.delete_chat("gone")

    assert other_replica.forget_chats_except(documents.chats()) == ["gone"]

    assert [path.name for path in (tmp_path / "other_replica").iterdir()] == ["chat_kept.jsonl"]
    assert other_replica.cached_chats() == ["kept"]
    assert other_replica.search("gone", "vaccine", k=5) == [] and other_replica.count("kept") == 1


def test_chats_are_isolated(store, documents):
    add(documents, "chat-a", [make_chunk("doc-a", 0, "Mitochondria produce ATP for the cell.")])
    add(documents, "chat-b", [
        make_chunk("doc-b", 0, "Mitochondria have their own DNA."), make_chunk("doc-b", 1, "ATP synthase."),
    ])
    assert {r.chunk.document_id for r in store.search("chat-a", "mitochondria ATP DNA synthase", k=10)} == {
        "doc-a"
    }
    assert {r.chunk.document_id for r in store.search("chat-b", "mitochondria ATP cell", k=10)} == {"doc-b"}


def test_ids_that_could_address_other_files_are_rejected(store):
    with pytest.raises(ValidationFailed):
        store.search("chat1/..", "vaccine", k=5)
    with pytest.raises(ValidationFailed):
        store.delete_chat("../chat1")


@pytest.mark.parametrize(
    "content",
    [
        b"\x80\x81 not utf-8",
        b"",
        b"this is not json\n",
        b'{"format": "something-else", "version": 1}\n',
        b'{"format": "axiom-bm25", "version": 1, "tokenizer": "x"}\n{"chunk_id": "a", "tex',
    ],
    ids=["not-utf8", "empty", "not-json", "foreign-header", "older-format"],
)
def test_a_cache_file_that_cannot_be_used_is_rebuilt_from_the_database(store, documents, index_dir, content):
    add(documents, "chat1", [BREAD])
    index_dir.mkdir()
    (index_dir / "chat_chat1.jsonl").write_bytes(content)
    assert ids(store.search("chat1", "sourdough", k=5)) == [BREAD.chunk_id]
    assert ids(BM25Store(index_dir, Tokenizer(), documents).search("chat1", "sourdough", k=5)) == [BREAD.chunk_id]


def test_a_torn_cache_file_of_the_current_version_is_rebuilt_and_logged(store, documents, index_dir, caplog):
    add(documents, "chat1", [VACCINE, BREAD])
    store.search("chat1", "vaccine", k=5)
    path = index_dir / "chat_chat1.jsonl"
    header, first, *_ = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(header + first[: len(first) // 2])
    with caplog.at_level(logging.WARNING, logger="backend.stores.bm25"):
        restarted = BM25Store(index_dir, Tokenizer(), documents)
        assert restarted.count("chat1") == 2
    assert "unreadable" in caplog.text


def test_a_cache_file_from_another_tokenizer_is_not_used(store, documents, index_dir):
    add(documents, "chat1", [make_chunk("doc", 0, "The runners were running.")])
    assert ids(store.search("chat1", "running", k=5)) == ["doc-p0-c0"]
    unstemmed = BM25Store(index_dir, Tokenizer(stem=False), documents)
    assert ids(unstemmed.search("chat1", "running", k=5)) == ["doc-p0-c0"]
    assert unstemmed.search("chat1", "run", k=5) == []


def test_the_bm25_files_of_an_earlier_release_are_copied_into_the_database(store, documents, index_dir):
    """Before the chunks table, a chat's file (format version 1) was the only copy of its chunk texts."""
    add(documents, "chat1", [VACCINE])  # a document of this release: its chunks are already stored
    for document_id in ("baking", "astronomy"):  # documents of the earlier release: no chunks in the database
        record = new_record(
            document_id=document_id, chat_id="chat1", filename=f"{document_id}.txt", sha256=document_id,
            file_type="txt", size_bytes=1, page_count=1,
        )
        documents.begin(record)
        documents.mark_ready(record, [], [])
    write_earlier_release_file(index_dir, "chat1", [BREAD, ORBITS, TIDES, VACCINE])

    assert store.import_legacy_files() == 3
    assert not (index_dir / "chat_chat1.jsonl").exists()
    assert ids(store.search("chat1", "sun orbits", k=5)) == [ORBITS.chunk_id, TIDES.chunk_id]
    assert store.count("chat1") == 4


def test_the_files_of_an_earlier_release_are_looked_for_once(store, documents, index_dir):
    """Every start would otherwise list the cache directory and read each chat's file header."""
    add(documents, "chat1", [VACCINE])
    store.search("chat1", "vaccines", k=1)  # writes this release's cache file

    assert store.import_legacy_files() == 0  # this release's cache file is not an earlier release's
    assert (index_dir / "chat_chat1.jsonl").exists() and (index_dir / LEGACY_IMPORTED_MARKER).exists()
    write_earlier_release_file(index_dir, "chat2", [BREAD])
    assert store.import_legacy_files() == 0
    assert (index_dir / "chat_chat2.jsonl").exists()  # not even opened


def test_an_unreadable_file_of_an_earlier_release_is_tried_again_at_the_next_start(store, index_dir):
    write_earlier_release_file(index_dir, "chat1", [BREAD])
    path = index_dir / "chat_chat1.jsonl"
    path.write_text(path.read_text()[:-20])  # torn in its last record

    assert store.import_legacy_files() == 0
    assert path.exists() and not (index_dir / LEGACY_IMPORTED_MARKER).exists()


def write_earlier_release_file(index_dir: Path, chat_id: str, chunks: list[Chunk]) -> None:
    """A BM25 file as the release before the chunks table wrote it (format version 1: the only copy of the texts)."""
    index_dir.mkdir(exist_ok=True)
    records = [{**vars_of(chunk), "terms": "x"} for chunk in chunks]
    header = {"format": "axiom-bm25", "version": 1, "tokenizer": "old"}
    lines = [json.dumps(line) for line in [header, *records]]
    (index_dir / f"chat_{chat_id}.jsonl").write_text("\n".join(lines) + "\n")


def vars_of(chunk: Chunk) -> dict:
    return {name: getattr(chunk, name) for name in ("chunk_id", "parent_id", "document_id", "filename", "page", "text")}


def test_a_database_that_cannot_be_read_fails_the_search(index_dir, tmp_path):
    broken = create_engine(f"sqlite:///{tmp_path / 'no-tables.db'}")  # no schema: every query fails
    with pytest.raises(RetrievalFailed):
        BM25Store(index_dir, Tokenizer(), DocumentStore(broken)).search("chat1", "vaccine", k=5)
    broken.dispose()


# A parent whose query terms are spread over its children: no single child holds them all.
KIDNEY = [
    make_chunk("nephrology", 0, "The kidney filters the blood through about a million nephrons."),
    make_chunk("nephrology", 1, "Each glomerulus passes water and small solutes into the tubule."),
    make_chunk("nephrology", 2, "Dialysis replaces the filtering when the organ fails."),
]
# One child mentions two of the terms, with nothing else around them.
GLOSSARY = make_chunk("glossary", 0, "Kidney: see nephron.")


def test_parent_search_ranks_whole_parents_and_represents_each_by_its_best_child(store, documents):
    add(documents, "chat1", [*KIDNEY, GLOSSARY, VACCINE])
    query = "kidney nephrons glomerulus tubule dialysis"
    parents = store.search_parents("chat1", query, k=5)

    assert [hit.chunk.parent_id for hit in parents] == ["nephrology-p0", "glossary-p0"]
    best_child = next(hit.chunk for hit in store.search("chat1", query, k=10) if hit.chunk in KIDNEY)
    assert parents[0].chunk == best_child == KIDNEY[1]  # the child scoring best stands for its parent
    assert parents[0].score > parents[1].score > 0
    assert store.search_parents("chat1", query, k=1) == parents[:1]
    assert store.search_parents("chat1", "quantum chromodynamics", k=5) == []


def test_parent_search_follows_deletes_replicas_and_chat_isolation(store, documents, tmp_path):
    add(documents, "chat-a", [*KIDNEY, VACCINE])
    add(documents, "chat-b", [GLOSSARY])

    assert {hit.chunk.document_id for hit in store.search_parents("chat-b", "kidney nephron vaccine", k=10)} == {
        "glossary"
    }
    other_replica = BM25Store(tmp_path / "other_replica", Tokenizer(), documents)
    assert other_replica.search_parents("chat-a", "kidney dialysis", k=5) == store.search_parents(
        "chat-a", "kidney dialysis", k=5
    )

    documents.remove("nephrology")
    assert store.search_parents("chat-a", "kidney dialysis glomerulus", k=5) == []
    assert other_replica.search_parents("chat-a", "kidney dialysis", k=5) == []
    assert [hit.chunk for hit in store.search_parents("chat-a", "vaccine", k=5)] == [VACCINE]


def test_a_recognised_chunk_stays_marked_through_the_database_and_the_cache(store, documents, index_dir):
    recognised = Chunk(ORBITS.chunk_id, ORBITS.parent_id, ORBITS.document_id, ORBITS.filename, ORBITS.page,
                       ORBITS.text, ocr=True)
    add(documents, "chat1", [BREAD, recognised])
    assert store.search("chat1", "elliptical orbits", k=1)[0].chunk == recognised
    assert BM25Store(index_dir, Tokenizer(), documents).search("chat1", "elliptical", k=1)[0].chunk == recognised

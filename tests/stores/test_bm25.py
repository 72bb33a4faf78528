import json
import logging
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from backend.errors import RetrievalFailed, ValidationFailed
from backend.models import Chunk
from backend.retrieval.tokenize import Tokenizer
from backend.stores.bm25 import BM25Store


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


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    return tmp_path / "bm25_indices"


@pytest.fixture
def store(index_dir: Path) -> BM25Store:
    return BM25Store(index_dir, Tokenizer())


def ids(results) -> list[str]:
    return [result.chunk.chunk_id for result in results]


def test_ranks_the_relevant_chunk_first(store):
    store.add("chat1", CORPUS)
    results = store.search("chat1", "how does a vaccine train immunity against infections?", k=4)
    assert ids(results) == [VACCINE.chunk_id]
    assert results[0].chunk == VACCINE
    assert results[0].score > 0


def test_returns_best_first_only_matching_chunks_up_to_k(store):
    store.add("chat1", CORPUS)
    results = store.search("chat1", "sun orbits", k=10)
    assert ids(results) == [ORBITS.chunk_id, TIDES.chunk_id]
    assert results[0].score > results[1].score > 0
    assert ids(store.search("chat1", "sun orbits", k=1)) == [ORBITS.chunk_id]


def test_queries_without_matching_terms_find_nothing(store):
    store.add("chat1", CORPUS)
    assert store.search("chat1", "quantum chromodynamics", k=5) == []
    assert store.search("chat1", "the and of", k=5) == []
    assert store.search("chat1", "", k=5) == []


def test_unknown_chat_is_empty(store, index_dir):
    assert store.search("nobody", "vaccine", k=5) == []
    assert store.count("nobody") == 0
    assert store.document_ids("nobody") == set()
    assert store.delete_document("nobody", "immunology") == 0
    assert not index_dir.exists()


def test_count_and_document_ids(store):
    store.add("chat1", CORPUS)
    assert store.count("chat1") == 4
    assert store.document_ids("chat1") == {"immunology", "baking", "astronomy"}


def test_re_adding_a_chunk_id_replaces_the_chunk(store):
    store.add("chat1", CORPUS)
    store.add("chat1", CORPUS)
    assert store.count("chat1") == 4

    rewritten = make_chunk("baking", 0, "Croissants are laminated with butter.")
    store.add("chat1", [rewritten])
    assert store.count("chat1") == 4
    assert store.search("chat1", "sourdough yeast", k=5) == []
    assert [result.chunk for result in store.search("chat1", "croissant butter", k=5)] == [rewritten]


def test_a_restarted_store_loads_the_index_on_first_use(store, index_dir):
    store.add("chat1", [VACCINE, BREAD])
    restarted = BM25Store(index_dir, Tokenizer())
    # Written after the restarted store was built: it can only find this if it reads the file on first use.
    store.add("chat1", [ORBITS])

    assert ids(restarted.search("chat1", "elliptical orbits", k=5)) == [ORBITS.chunk_id]
    assert restarted.search("chat1", "sourdough", k=5)[0].chunk == BREAD
    assert restarted.count("chat1") == 3


def test_delete_document_removes_it_from_search_and_from_disk(store, index_dir):
    store.add("chat1", CORPUS)
    assert store.delete_document("chat1", "astronomy") == 2
    assert store.delete_document("chat1", "astronomy") == 0

    assert store.search("chat1", "sun orbits tides", k=5) == []
    assert ids(store.search("chat1", "vaccine", k=5)) == [VACCINE.chunk_id]
    restarted = BM25Store(index_dir, Tokenizer())
    assert restarted.search("chat1", "sun orbits tides", k=5) == []
    assert restarted.document_ids("chat1") == {"immunology", "baking"}


def test_deleting_every_document_leaves_no_index_file(store, index_dir):
    store.add("chat1", [VACCINE])
    assert store.delete_document("chat1", "immunology") == 1
    assert list(index_dir.iterdir()) == []
    assert BM25Store(index_dir, Tokenizer()).count("chat1") == 0


def test_chats_are_isolated(store, index_dir):
    chat_a = [make_chunk("doc-a", 0, "Mitochondria produce ATP for the cell.")]
    chat_b = [
        make_chunk("doc-b", 0, "Mitochondria have their own DNA."),
        make_chunk("doc-b", 1, "ATP synthase."),
    ]
    store.add("chat-a", chat_a)
    store.add("chat-b", chat_b)

    assert {r.chunk.document_id for r in store.search("chat-a", "mitochondria ATP DNA synthase", k=10)} == {
        "doc-a"
    }
    assert {r.chunk.document_id for r in store.search("chat-b", "mitochondria ATP cell", k=10)} == {"doc-b"}
    assert store.delete_document("chat-a", "doc-b") == 0

    store.delete_chat("chat-a")
    assert store.search("chat-a", "mitochondria", k=10) == []
    assert store.count("chat-b") == 2
    restarted = BM25Store(index_dir, Tokenizer())
    assert restarted.count("chat-a") == 0
    assert restarted.count("chat-b") == 2


def test_ids_that_could_address_other_files_are_rejected(store):
    with pytest.raises(ValidationFailed):
        store.add("../chat1", [VACCINE])
    with pytest.raises(ValidationFailed):
        store.search("chat1/..", "vaccine", k=5)


@pytest.mark.parametrize(
    "content",
    [
        b"\x80\x81 not utf-8",
        b"",
        b"this is not json\n",
        b'{"format": "something-else", "version": 1}\n',
        b'{"format": "axiom-bm25", "version": 1, "tokenizer": "x"}\n{"chunk_id": "a", "tex',
        b'{"format": "axiom-bm25", "version": 1, "tokenizer": "x"}\n["a list, not a chunk"]\n',
    ],
    ids=["not-utf8", "empty", "not-json", "foreign-header", "truncated", "wrong-shape"],
)
def test_an_unreadable_index_fails_every_search_until_the_next_add_rebuilds_it(index_dir, content, caplog):
    index_dir.mkdir()
    (index_dir / "chat_chat1.jsonl").write_bytes(content)
    store = BM25Store(index_dir, Tokenizer())

    with caplog.at_level(logging.ERROR, logger="backend.stores.bm25"), pytest.raises(RetrievalFailed):
        store.search("chat1", "vaccine", k=5)
    assert "unreadable" in caplog.text
    with pytest.raises(RetrievalFailed):  # every search, not just the first: "no match" is not known
        store.search("chat1", "vaccine", k=5)
    assert store.count("chat1") == 0
    assert store.delete_document("chat1", "immunology") == 0
    with pytest.raises(RetrievalFailed):
        store.search("chat1", "vaccine", k=5)

    store.add("chat1", [BREAD])
    assert ids(store.search("chat1", "sourdough", k=5)) == [BREAD.chunk_id]
    assert ids(BM25Store(index_dir, Tokenizer()).search("chat1", "sourdough", k=5)) == [BREAD.chunk_id]


def test_a_failed_save_keeps_the_previous_index_on_disk_and_in_memory(store, index_dir):
    store.add("chat1", [VACCINE])
    page_json_cannot_encode = object()
    unserialisable = Chunk(
        "bad-p0-c0", "bad-p0", "bad", "bad.txt", page_json_cannot_encode, "Yeast and flour."
    )
    with pytest.raises(TypeError):
        store.add("chat1", [BREAD, unserialisable])

    assert [path.name for path in index_dir.iterdir()] == ["chat_chat1.jsonl"]
    assert store.document_ids("chat1") == {"immunology"}
    assert store.search("chat1", "sourdough yeast", k=5) == []
    assert BM25Store(index_dir, Tokenizer()).document_ids("chat1") == {"immunology"}


def test_terms_from_another_tokenizer_are_recomputed_on_load(store, index_dir):
    store.add("chat1", [make_chunk("doc", 0, "The runners were running.")])
    unstemmed = BM25Store(index_dir, Tokenizer(stem=False))
    assert ids(unstemmed.search("chat1", "running", k=5)) == ["doc-p0-c0"]


def test_concurrent_adds_to_one_chat_are_all_kept(store, index_dir):
    def add_document(number: int) -> None:
        store.add(
            "chat1", [make_chunk(f"doc{number}", part, f"topic{number} part {part}") for part in range(5)]
        )

    threads = [threading.Thread(target=add_document, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert store.count("chat1") == 40
    assert BM25Store(index_dir, Tokenizer()).document_ids("chat1") == {f"doc{number}" for number in range(8)}


# A parent whose query terms are spread over its children: no single child holds them all.
KIDNEY = [
    make_chunk("nephrology", 0, "The kidney filters the blood through about a million nephrons."),
    make_chunk("nephrology", 1, "Each glomerulus passes water and small solutes into the tubule."),
    make_chunk("nephrology", 2, "Dialysis replaces the filtering when the organ fails."),
]
# One child mentions two of the terms, with nothing else around them.
GLOSSARY = make_chunk("glossary", 0, "Kidney: see nephron.")


def test_parent_search_ranks_whole_parents_and_represents_each_by_its_best_child(store):
    store.add("chat1", [*KIDNEY, GLOSSARY, VACCINE])
    query = "kidney nephrons glomerulus tubule dialysis"
    parents = store.search_parents("chat1", query, k=5)

    assert [hit.chunk.parent_id for hit in parents] == ["nephrology-p0", "glossary-p0"]
    best_child = next(hit.chunk for hit in store.search("chat1", query, k=10) if hit.chunk in KIDNEY)
    assert parents[0].chunk == best_child == KIDNEY[1]  # the child scoring best stands for its parent
    assert parents[0].score > parents[1].score > 0
    assert store.search_parents("chat1", query, k=1) == parents[:1]
    assert store.search_parents("chat1", "quantum chromodynamics", k=5) == []


def test_parent_search_follows_deletes_restarts_and_chat_isolation(store, index_dir):
    store.add("chat-a", [*KIDNEY, VACCINE])
    store.add("chat-b", [GLOSSARY])

    assert {hit.chunk.document_id for hit in store.search_parents("chat-b", "kidney nephron vaccine", k=10)} == {
        "glossary"
    }
    restarted = BM25Store(index_dir, Tokenizer())  # rebuilt from the stored terms
    assert restarted.search_parents("chat-a", "kidney dialysis", k=5) == store.search_parents(
        "chat-a", "kidney dialysis", k=5
    )

    assert store.delete_document("chat-a", "nephrology") == 3
    assert store.search_parents("chat-a", "kidney dialysis glomerulus", k=5) == []
    assert BM25Store(index_dir, Tokenizer()).search_parents("chat-a", "kidney dialysis", k=5) == []
    assert [hit.chunk for hit in store.search_parents("chat-a", "vaccine", k=5)] == [VACCINE]

    store.delete_chat("chat-b")
    assert store.search_parents("chat-b", "kidney", k=5) == []


def test_parent_search_of_an_unreadable_index_fails_like_child_search(index_dir):
    index_dir.mkdir()
    (index_dir / "chat_chat1.jsonl").write_bytes(b"this is not json\n")
    with pytest.raises(RetrievalFailed):
        BM25Store(index_dir, Tokenizer()).search_parents("chat1", "vaccine", k=5)


def test_a_recognised_chunk_stays_marked_and_an_index_from_before_the_mark_still_loads(store, index_dir):
    recognised = replace(ORBITS, ocr=True)
    store.add("chat1", [BREAD, recognised])
    assert BM25Store(index_dir, Tokenizer()).search("chat1", "elliptical orbits", k=1)[0].chunk == recognised

    (path,) = index_dir.iterdir()
    header, *records = path.read_text(encoding="utf-8").splitlines()
    older = [json.dumps({k: v for k, v in json.loads(record).items() if k != "ocr"}) for record in records]
    path.write_text("\n".join([header, *older]) + "\n", encoding="utf-8")

    restarted = BM25Store(index_dir, Tokenizer())
    assert restarted.search("chat1", "sourdough", k=1)[0].chunk == BREAD
    assert restarted.search("chat1", "elliptical orbits", k=1)[0].chunk == ORBITS  # unmarked, as it was stored

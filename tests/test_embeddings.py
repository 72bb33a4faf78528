"""The embedding providers run the real bundled MiniLM files; the cache runs on a real SQLite file."""

from __future__ import annotations

import socket
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from backend.config import Settings
from backend.embeddings import (
    DIMENSION,
    CachedEmbedder,
    Embedder,
    EmbedderUnavailable,
    FastEmbedMiniLM,
    OnnxInt8MiniLM,
    SentenceTransformerMiniLM,
    build_embedder,
)

CAT = "A cat is sleeping on the warm windowsill."
CAT_PARAPHRASE = "A kitten naps on the sunny window ledge."
UNRELATED = "The central bank raised interest rates by half a percentage point."
# Longer than MAX_TOKENS word pieces, so truncation is exercised too.
LONG_TEXT = " ".join(
    ["Mitochondrial dysfunction alters the metabolic state of T cells during chronic infection."] * 40
)


class CountingEmbedder:
    """Delegates to a real embedder and records what it was asked to embed."""

    def __init__(self, inner: Embedder, model_id: str | None = None) -> None:
        self._inner = inner
        self.model_id = model_id or inner.model_id
        self.dimension = inner.dimension
        self.document_calls: list[list[str]] = []
        self.query_calls: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.document_calls.append(list(texts))
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self.query_calls.append(text)
        return self._inner.embed_query(text)


@pytest.fixture(scope="module")
def int8_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def onnx_int8_model(int8_model_dir: Path) -> OnnxInt8MiniLM:
    return OnnxInt8MiniLM(int8_model_dir)


@pytest.fixture(scope="module")
def fastembed_model() -> FastEmbedMiniLM:
    return FastEmbedMiniLM(batch_size=32)


@pytest.fixture(scope="module")
def sentence_transformer_model() -> SentenceTransformerMiniLM:
    pytest.importorskip("sentence_transformers")
    return SentenceTransformerMiniLM(batch_size=32)


@pytest.fixture(params=["onnx-int8", "fastembed", "sentence-transformers"])
def model(request: pytest.FixtureRequest) -> Embedder:
    fixture = {
        "onnx-int8": "onnx_int8_model",
        "fastembed": "fastembed_model",
        "sentence-transformers": "sentence_transformer_model",
    }
    return request.getfixturevalue(fixture[request.param])


@pytest.fixture
def counting(fastembed_model: FastEmbedMiniLM) -> CountingEmbedder:
    return CountingEmbedder(fastembed_model)


def test_documents_are_normalised_float32_rows_in_input_order(model: Embedder) -> None:
    texts = [
        LONG_TEXT,
        UNRELATED,
        CAT,
    ]  # not in length order: the onnxruntime providers batch by length, then restore the order
    vectors = model.embed_documents(texts)

    assert model.dimension == DIMENSION
    assert vectors.shape == (3, DIMENSION)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    for text, row in zip(texts, vectors):
        np.testing.assert_allclose(row, model.embed_documents([text])[0], atol=1e-5)


def test_query_is_one_normalised_vector_matching_the_document_vector(model: Embedder) -> None:
    query = model.embed_query(CAT)

    assert query.shape == (DIMENSION,)
    assert query.dtype == np.float32
    assert np.linalg.norm(query) == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(query, model.embed_documents([CAT])[0], atol=1e-5)


def test_no_texts_give_an_empty_matrix(model: Embedder) -> None:
    assert model.embed_documents([]).shape == (0, DIMENSION)


def test_a_paraphrase_ranks_above_an_unrelated_sentence(model: Embedder) -> None:
    query = model.embed_query(CAT)
    paraphrase, unrelated = model.embed_documents([CAT_PARAPHRASE, UNRELATED])

    assert query @ paraphrase > query @ unrelated + 0.3


def test_int8_and_fp32_providers_agree(
    fastembed_model: FastEmbedMiniLM, sentence_transformer_model: SentenceTransformerMiniLM
) -> None:
    texts = [CAT, CAT_PARAPHRASE, UNRELATED, LONG_TEXT]
    int8 = fastembed_model.embed_documents(texts)
    fp32 = sentence_transformer_model.embed_documents(texts)

    assert np.min(np.sum(int8 * fp32, axis=1)) > 0.98
    assert fastembed_model.model_id != sentence_transformer_model.model_id


def test_int8_arithmetic_agrees_with_the_packaged_model(
    onnx_int8_model: OnnxInt8MiniLM, fastembed_model: FastEmbedMiniLM
) -> None:
    texts = [CAT, CAT_PARAPHRASE, UNRELATED, LONG_TEXT]
    int8 = onnx_int8_model.embed_documents(texts)
    packaged = fastembed_model.embed_documents(texts)

    assert np.min(np.sum(int8 * packaged, axis=1)) > 0.98
    assert onnx_int8_model.model_id != fastembed_model.model_id


def _sentences(n: int) -> list[str]:
    """Texts of many lengths, so length-sorted batches differ from the input order."""
    return [f"Finding {i}: " + "the treated group improved " * (1 + (i * 7) % 13) for i in range(n)]


def test_parallel_one_by_one_embedding_gives_each_text_its_own_vector_in_order(
    onnx_int8_model: OnnxInt8MiniLM, int8_model_dir: Path
) -> None:
    texts = _sentences(12)
    parallel = OnnxInt8MiniLM(int8_model_dir, batch_size=1, workers=3).embed_documents(texts)

    assert parallel.shape == (len(texts), DIMENSION)
    for text, row in zip(texts, parallel):
        # Exactly equal: each text is quantized on its own, whatever runs beside it.
        np.testing.assert_array_equal(row, onnx_int8_model.embed_documents([text])[0])


def test_length_sorted_batches_come_back_in_input_order(
    onnx_int8_model: OnnxInt8MiniLM, int8_model_dir: Path
) -> None:
    texts = _sentences(12)
    batched = OnnxInt8MiniLM(int8_model_dir, batch_size=5, workers=2).embed_documents(texts)
    alone = onnx_int8_model.embed_documents(texts)

    # In a batch the int8 activations share one scale, so the vectors move a little, but each row is its own
    # text's: nearest to that text's vector embedded alone, of all the texts.
    similarity = batched @ alone.T
    assert np.min(np.diag(similarity)) > 0.98
    assert list(np.argmax(similarity, axis=1)) == list(range(len(texts)))


def test_int8_model_is_made_once_per_directory(onnx_int8_model: OnnxInt8MiniLM, int8_model_dir: Path) -> None:
    (made,) = int8_model_dir.glob("*.onnx")
    stale = int8_model_dir / "all-MiniLM-L6-v2-dynamic-int8-0000000000000000.onnx"
    stale.write_bytes(b"made by an older onnxruntime")
    modified = made.stat().st_mtime_ns

    OnnxInt8MiniLM(int8_model_dir)

    assert made.stat().st_mtime_ns == modified
    assert stale.exists()  # only a new build clears older files


def test_second_call_is_served_from_the_cache(counting: CountingEmbedder, tmp_path: Path) -> None:
    cached = CachedEmbedder(counting, tmp_path / "cache.db")
    first = cached.embed_documents([CAT, UNRELATED])
    second = cached.embed_documents([CAT, UNRELATED])

    assert counting.document_calls == [[CAT, UNRELATED]]
    np.testing.assert_array_equal(first, second)
    assert second.dtype == np.float32


def test_only_misses_are_embedded_once_each_and_order_is_kept(
    counting: CountingEmbedder, fastembed_model: FastEmbedMiniLM, tmp_path: Path
) -> None:
    cached = CachedEmbedder(counting, tmp_path / "cache.db")
    cached.embed_documents([CAT, UNRELATED])

    texts = [CAT_PARAPHRASE, CAT, CAT_PARAPHRASE, UNRELATED, LONG_TEXT, CAT]
    vectors = cached.embed_documents(texts)

    assert counting.document_calls[1:] == [[CAT_PARAPHRASE, LONG_TEXT]]
    assert vectors.shape == (len(texts), DIMENSION)
    for text, row in zip(texts, vectors):
        np.testing.assert_allclose(row, fastembed_model.embed_documents([text])[0], atol=1e-5)


def test_all_hits_make_no_model_call(counting: CountingEmbedder, tmp_path: Path) -> None:
    cached = CachedEmbedder(counting, tmp_path / "cache.db")
    cached.embed_documents([CAT, UNRELATED])
    cached.embed_documents([UNRELATED, CAT, UNRELATED])
    cached.embed_documents([])

    assert len(counting.document_calls) == 1


def test_cache_survives_reopening_the_file(fastembed_model: FastEmbedMiniLM, tmp_path: Path) -> None:
    path = tmp_path / "nested" / "cache.db"
    before = CachedEmbedder(CountingEmbedder(fastembed_model), path).embed_documents([CAT, UNRELATED])

    reopened_inner = CountingEmbedder(fastembed_model)
    after = CachedEmbedder(reopened_inner, path).embed_documents([CAT, UNRELATED])

    assert reopened_inner.document_calls == []
    np.testing.assert_array_equal(before, after)


def test_cache_entries_belong_to_one_model_id(fastembed_model: FastEmbedMiniLM, tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    CachedEmbedder(CountingEmbedder(fastembed_model), path).embed_documents([CAT])

    other_model = CountingEmbedder(fastembed_model, model_id="another-model")
    CachedEmbedder(other_model, path).embed_documents([CAT])

    assert other_model.document_calls == [[CAT]]


def test_queries_are_cached_apart_from_documents(counting: CountingEmbedder, tmp_path: Path) -> None:
    cached = CachedEmbedder(counting, tmp_path / "cache.db")
    cached.embed_documents([CAT])
    first = cached.embed_query(CAT)
    second = cached.embed_query(CAT)

    assert counting.query_calls == [CAT]
    assert first.shape == (DIMENSION,)
    np.testing.assert_array_equal(first, second)


def test_cache_is_safe_to_share_between_threads(fastembed_model: FastEmbedMiniLM, tmp_path: Path) -> None:
    cached = CachedEmbedder(fastembed_model, tmp_path / "cache.db")
    batches = [[CAT, UNRELATED], [UNRELATED, CAT_PARAPHRASE], [CAT_PARAPHRASE, CAT]] * 4

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(cached.embed_documents, batches))

    for texts, vectors in zip(batches, results):
        np.testing.assert_allclose(vectors, fastembed_model.embed_documents(texts), atol=1e-5)


@pytest.mark.parametrize(
    ("provider", "model_id"),
    [
        ("onnx-int8", OnnxInt8MiniLM.model_id),
        ("fastembed", FastEmbedMiniLM.model_id),
        ("sentence-transformers", SentenceTransformerMiniLM.model_id),
    ],
)
def test_build_embedder_picks_the_configured_provider_behind_the_cache(
    provider: str, model_id: str, tmp_path: Path
) -> None:
    if provider == "sentence-transformers":
        pytest.importorskip("sentence_transformers")
    settings = Settings(data_dir=tmp_path, embedding_provider=provider)
    embedder = build_embedder(settings)

    assert isinstance(embedder, CachedEmbedder)
    assert embedder.model_id == model_id
    assert embedder.embed_documents([CAT]).shape == (1, DIMENSION)
    assert settings.embedding_cache_path is not None and settings.embedding_cache_path.exists()


def test_missing_sentence_transformers_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A None entry in sys.modules makes the import fail as it does when the package is absent.
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    settings = Settings(data_dir=tmp_path, embedding_provider="sentence-transformers")

    with pytest.raises(EmbedderUnavailable, match=r"pip install 'axiom\[sentence-transformers\]'"):
        build_embedder(settings)


def test_default_provider_is_made_and_loaded_without_a_network(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("the embedder tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    # By default the model is kept in the user's cache, shared by every data directory.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert Settings(data_dir=tmp_path).embedding_model_dir == tmp_path / "cache" / "axiom" / "models"
    # A fresh directory: the int8 model is made here, from installed files, and replaces older ones.
    settings = Settings(data_dir=tmp_path, embedding_model_dir=tmp_path / "models")
    stale = tmp_path / "models" / "all-MiniLM-L6-v2-dynamic-int8-0000000000000000.onnx"
    stale.parent.mkdir()
    stale.write_bytes(b"made by an older onnxruntime")
    embedder = build_embedder(settings)

    assert settings.embedding_provider == "onnx-int8"
    assert embedder.model_id == OnnxInt8MiniLM.model_id
    assert embedder.embed_query(CAT) @ embedder.embed_query(CAT_PARAPHRASE) > 0.5
    assert settings.embedding_model_dir == tmp_path / "models"
    assert [path.name for path in settings.embedding_model_dir.iterdir()] != [stale.name]
    assert not stale.exists()

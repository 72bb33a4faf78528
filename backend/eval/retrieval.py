"""`axiom eval retrieval`: the real ingestion and retrieval code, scored on a BEIR-format dataset.

Each BEIR document is ingested as one TXT file into one chat. Retrievers rank child chunks; a document's rank is
that of its best chunk. Methods: bm25 (child chunks), bm25-parents (whole parents), dense, hybrid (the configured fusion), hybrid+rerank (fused candidates
expanded to parents, the top ``initial_k`` re-scored by the configured reranker, the rest kept in fused order).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass

from backend.container import Services
from backend.eval.beir import BeirDataset
from backend.eval.metrics import mrr_at, ndcg_at, percentile, recall_at
from backend.ingest.service import IngestedDocument
from backend.models import Passage, ScoredChunk

METHODS = ("bm25", "bm25-parents", "dense", "hybrid", "hybrid+rerank")
EVAL_CHAT = "beir-eval"
_INGEST_BATCH = 256


@dataclass(frozen=True)
class MethodScores:
    method: str
    ndcg_at_10: float
    recall_at_10: float
    recall_at_100: float
    mrr_at_10: float
    p50_ms: float
    p95_ms: float


@dataclass(frozen=True)
class RetrievalReport:
    documents: int
    chunks: int
    queries: int
    index_build_s: float
    query_embedding_p50_ms: float
    fusion: str
    reranker: str
    depth: int
    methods: list[MethodScores]

    def as_dict(self) -> dict:
        return asdict(self)

    def table(self) -> str:
        lines = [
            (
                f"documents {self.documents}, chunks {self.chunks}, queries {self.queries}, "
                f"index build {self.index_build_s:.1f} s, fusion {self.fusion}, reranker {self.reranker}, "
                f"depth {self.depth} chunks per retriever"
            ),
            f"latencies exclude the query embedding (cached beforehand; it took {self.query_embedding_p50_ms:.1f} ms p50)",
            f"{'method':<15}{'nDCG@10':>9}{'R@10':>8}{'R@100':>8}{'MRR@10':>8}{'p50 ms':>9}{'p95 ms':>9}",
        ]
        for m in self.methods:
            lines.append(
                f"{m.method:<15}{m.ndcg_at_10:>9.4f}{m.recall_at_10:>8.4f}{m.recall_at_100:>8.4f}"
                f"{m.mrr_at_10:>8.4f}{m.p50_ms:>9.1f}{m.p95_ms:>9.1f}"
            )
        return "\n".join(lines)


def _ingest_corpus(services: Services, corpus: dict[str, str], log: Callable[[str], None]) -> dict[str, str]:
    """Ingests every document; returns Axiom document id → BEIR doc id."""
    beir_ids = list(corpus)
    to_beir: dict[str, str] = {}
    for start in range(0, len(beir_ids), _INGEST_BATCH):
        batch = beir_ids[start : start + _INGEST_BATCH]
        files = [(f"doc{start + i}.txt", corpus[doc_id].encode()) for i, doc_id in enumerate(batch)]
        for doc_id, result in zip(batch, services.ingestion.ingest_many(EVAL_CHAT, files)):
            if isinstance(result, IngestedDocument):
                to_beir.setdefault(result.document_id, doc_id)
            else:
                log(f"  skipped {doc_id}: {result.message}")
        log(f"  ingested {min(start + _INGEST_BATCH, len(beir_ids))}/{len(beir_ids)} documents")
    return to_beir


def _document_ranking(document_ids: Iterable[str], to_beir: dict[str, str]) -> list[str]:
    return list(dict.fromkeys(to_beir[d] for d in document_ids if d in to_beir))


def _chunk_docs(ranked: Sequence[ScoredChunk]) -> Iterable[str]:
    return (hit.chunk.document_id for hit in ranked)


def _passage_docs(passages: Sequence[Passage]) -> Iterable[str]:
    return (p.parent.document_id for p in passages)


def evaluate_retrieval(
    services: Services,
    dataset: BeirDataset,
    *,
    depth: int = 300,
    log: Callable[[str], None] = lambda _: None,
) -> RetrievalReport:
    log(f"indexing {len(dataset.corpus)} documents")
    started = time.perf_counter()
    to_beir = _ingest_corpus(services, dataset.corpus, log)
    index_build_s = time.perf_counter() - started

    embed_ms = []
    for text in dataset.queries.values():
        started = time.perf_counter()
        services.embedder.embed_query(text)  # fills the cache, so methods are timed on equal terms
        embed_ms.append((time.perf_counter() - started) * 1000)

    retriever = services.retriever
    initial_k = retriever.depths.initial_k

    def rerank_then_rest(query: str) -> Iterable[str]:
        passages = retriever.expand(retriever.fused(EVAL_CHAT, query, depth=depth)[0])
        head = retriever.rerank(query, passages[:initial_k])
        return _passage_docs(head + passages[initial_k:])

    runs: dict[str, Callable[[str], Iterable[str]]] = {
        "bm25": lambda q: _chunk_docs(services.sparse.search(EVAL_CHAT, q, depth)),
        "bm25-parents": lambda q: _chunk_docs(services.keywords.search_parents(EVAL_CHAT, q, depth)),
        "dense": lambda q: _chunk_docs(services.dense.search(EVAL_CHAT, q, depth)),
        "hybrid": lambda q: _chunk_docs(retriever.fused(EVAL_CHAT, q, depth=depth)[0]),
        "hybrid+rerank": rerank_then_rest,
    }
    scores = []
    for method in METHODS:
        log(f"scoring {method} on {len(dataset.queries)} queries")
        per_query: list[tuple[float, float, float, float]] = []
        latencies: list[float] = []
        for query_id, text in dataset.queries.items():
            started = time.perf_counter()
            ranked = _document_ranking(runs[method](text), to_beir)
            latencies.append((time.perf_counter() - started) * 1000)
            relevant = dataset.qrels[query_id]
            per_query.append((
                ndcg_at(ranked, relevant, 10), recall_at(ranked, relevant, 10),
                recall_at(ranked, relevant, 100), mrr_at(ranked, relevant, 10),
            ))
        means = [sum(column) / len(per_query) for column in zip(*per_query)]
        scores.append(MethodScores(method, *means, percentile(latencies, 50), percentile(latencies, 95)))

    settings = services.settings
    return RetrievalReport(
        documents=len(to_beir),
        chunks=services.keywords.count(EVAL_CHAT),
        queries=len(dataset.queries),
        index_build_s=index_build_s,
        query_embedding_p50_ms=percentile(embed_ms, 50),
        fusion=(
            f"{settings.fusion_method} (dense weight {settings.dense_weight}, "
            f"BM25 parent share {settings.bm25_parent_share})"
        ),
        reranker=retriever.reranker.name,
        depth=depth,
        methods=scores,
    )

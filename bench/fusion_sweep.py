"""Fusion settings on a BEIR split, through the real fusion, parent expansion and reranker code.

    .venv/bin/python bench/fusion_sweep.py --beir ../shared/data/beir-scifact --split train \
        --index /tmp/axiom-sweep/scifact

Ingests the corpus once into ``--index`` (as `axiom eval retrieval` does: one TXT file per document, named
doc<i>.txt in corpus order) and reuses it on later runs; each query's three ranked lists (dense children, BM25
children, BM25 parents, ``--depth`` deep) are cached beside it, so a sweep re-runs only fusion and reranking.
Prints nDCG@10 of the fused order ("hybrid") and of the reranked order ("hybrid+rerank", the default pipeline:
the top ``initial_k`` passages reranked by the bi-encoder, the rest in fused order) for every dense weight and
BM25 parent share in the grid; method "convex" unless ``--rrf``.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import scratch_services

from backend.container import Services
from backend.eval.beir import BeirDataset, load_beir
from backend.eval.metrics import ndcg_at
from backend.eval.retrieval import EVAL_CHAT, _ingest_corpus
from backend.models import ScoredChunk
from backend.retrieval.fusion import make_fuser

Lists = tuple[list[ScoredChunk], list[ScoredChunk], list[ScoredChunk]]


def index_once(services: Services, dataset: BeirDataset, index: Path) -> dict[str, str]:
    """Axiom document id → BEIR doc id, ingesting the corpus only if the index is empty."""
    if services.keywords.count(EVAL_CHAT) == 0:
        _ingest_corpus(services, dataset.corpus, lambda message: print(message, file=sys.stderr))
    beir_ids = list(dataset.corpus)
    return {
        record.document_id: beir_ids[int(record.filename.removeprefix("doc").removesuffix(".txt"))]
        for record in services.documents.list(EVAL_CHAT)
    }


def ranked_lists(services: Services, dataset: BeirDataset, cache: Path, depth: int) -> dict[str, Lists]:
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    lists = {
        query_id: (
            services.dense.search(EVAL_CHAT, text, depth),
            services.keywords.search(EVAL_CHAT, text, depth),
            services.keywords.search_parents(EVAL_CHAT, text, depth),
        )
        for query_id, text in dataset.queries.items()
    }
    cache.write_bytes(pickle.dumps(lists))
    return lists


def documents_in_order(document_ids: Iterable[str], to_beir: dict[str, str]) -> list[str]:
    return list(dict.fromkeys(to_beir[d] for d in document_ids if d in to_beir))


def score(
    services: Services, dataset: BeirDataset, lists: dict[str, Lists], to_beir: dict[str, str],
    *, method: str, dense_weight: float, parent_share: float, depth: int,
) -> tuple[float, float]:
    fuse = make_fuser(method, dense_weight=dense_weight, rrf_k=60, bm25_parent_share=parent_share)
    retriever = services.retriever
    initial_k = retriever.depths.initial_k
    fused_ndcg, reranked_ndcg = [], []
    for query_id, text in dataset.queries.items():
        dense, children, parents = lists[query_id]
        fused = fuse([dense, children, parents] if parent_share > 0 else [dense, children])[:depth]
        relevant = dataset.qrels[query_id]
        fused_ndcg.append(ndcg_at(documents_in_order((h.chunk.document_id for h in fused), to_beir), relevant, 10))
        passages = retriever.expand(fused)
        reranked = retriever.rerank(text, passages[:initial_k]) + passages[initial_k:]
        reranked_docs = documents_in_order((p.parent.document_id for p in reranked), to_beir)
        reranked_ndcg.append(ndcg_at(reranked_docs, relevant, 10))
    return mean(fused_ndcg), mean(reranked_ndcg)


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--beir", type=Path, required=True)
    parser.add_argument("--split", default="train")
    parser.add_argument("--index", type=Path, required=True, help="directory kept between runs")
    parser.add_argument("--depth", type=int, default=300)
    parser.add_argument("--dense-weights", type=float, nargs="+", default=[0.4, 0.45, 0.5, 0.6])
    parser.add_argument("--parent-shares", type=float, nargs="+", default=[0.0, 0.75, 0.9, 1.0])
    parser.add_argument("--rrf", action="store_true", help="reciprocal rank fusion instead of convex")
    args = parser.parse_args()

    dataset = load_beir(args.beir, args.split)
    args.index.mkdir(parents=True, exist_ok=True)
    services = scratch_services(args.index)
    to_beir = index_once(services, dataset, args.index)
    lists = ranked_lists(services, dataset, args.index / f"lists-{args.split}-{args.depth}.pickle", args.depth)
    method = "rrf" if args.rrf else "convex"
    print(f"{args.beir.name} {args.split}: {len(dataset.queries)} queries, {method}, depth {args.depth}")
    print(f"{'dense weight':>12}{'parent share':>14}{'hybrid':>9}{'+rerank':>9}")
    for dense_weight in args.dense_weights:
        for parent_share in args.parent_shares:
            fused, reranked = score(
                services, dataset, lists, to_beir,
                method=method, dense_weight=dense_weight, parent_share=parent_share, depth=args.depth,
            )
            print(f"{dense_weight:>12.2f}{parent_share:>14.2f}{fused:>9.4f}{reranked:>9.4f}", flush=True)


if __name__ == "__main__":
    main()

"""Builds every long-lived part once, from Settings, in dependency order. Tests build the same with tmp paths."""

from __future__ import annotations

from dataclasses import dataclass

from backend.config import Settings
from backend.embeddings import Embedder, build_embedder
from backend.ingest.chunker import ParentChildChunker
from backend.ingest.service import IngestionService
from backend.retrieval.dense import DenseRetriever
from backend.retrieval.fusion import make_fuser
from backend.retrieval.hybrid import HybridRetriever, RetrievalDepths
from backend.retrieval.rerank import build_reranker
from backend.retrieval.sparse import SparseRetriever
from backend.retrieval.tokenize import Tokenizer
from backend.stores.bm25 import BM25Store
from backend.stores.chroma import ChromaStore
from backend.stores.documents import DocumentStore


@dataclass
class Services:
    settings: Settings
    embedder: Embedder
    vectors: ChromaStore
    keywords: BM25Store
    documents: DocumentStore
    ingestion: IngestionService
    dense: DenseRetriever
    sparse: SparseRetriever
    retriever: HybridRetriever


def build_services(settings: Settings, *, embedder: Embedder | None = None) -> Services:
    """``embedder`` lets tests share one loaded model across many temporary containers."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    embedder = embedder or build_embedder(settings)
    vectors = ChromaStore.from_settings(settings)
    keywords = BM25Store(settings.bm25_dir, Tokenizer())
    documents = DocumentStore(settings.docstore_path)
    chunker = ParentChildChunker(
        settings.parent_chunk_size, settings.parent_chunk_overlap,
        settings.child_chunk_size, settings.child_chunk_overlap,
    )
    ingestion = IngestionService(
        chunker=chunker, embedder=embedder, vectors=vectors, keywords=keywords, documents=documents
    )
    ingestion.recover()
    dense = DenseRetriever(embedder, vectors)
    sparse = SparseRetriever(keywords)
    retriever = HybridRetriever(
        dense,
        sparse,
        make_fuser(settings.fusion_method, dense_weight=settings.dense_weight, rrf_k=settings.rrf_k),
        documents,
        build_reranker(settings.reranker, embedder, settings.cross_encoder_model),
        RetrievalDepths(
            vector_k=settings.retrieval_vector_k, bm25_k=settings.retrieval_bm25_k,
            initial_k=settings.retrieval_initial_k, final_k=settings.retrieval_final_k,
            relevance_threshold=settings.relevance_threshold,
        ),
    )
    return Services(settings, embedder, vectors, keywords, documents, ingestion, dense, sparse, retriever)

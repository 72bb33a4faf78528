"""Builds every long-lived part once, from Settings, in dependency order. Tests build the same with tmp paths."""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

from sqlalchemy import Engine

from backend.config import Settings
from backend.embeddings import Embedder, build_embedder
from backend.ingest.chunker import ParentChildChunker
from backend.ingest.loaders import OcrOptions
from backend.ingest.reader import DocumentReader, ReaderLimits
from backend.ingest.service import IngestionService
from backend.llm.base import LLM, ChatMessage, GenerationParams
from backend.llm.factory import build_llm
from backend.llm.scheduled import ScheduledLLM
from backend.llm.scheduler import LLMScheduler
from backend.rag.answerability import AnswerabilityPolicy
from backend.rag.deps import GenerationLimits, RAGDeps
from backend.rag.grounding import GroundednessChecker, format_check_prompt
from backend.rag.intent import IntentRouter
from backend.rag.pipeline import RAGPipeline
from backend.retrieval.dense import DenseRetriever
from backend.retrieval.fusion import make_fuser
from backend.retrieval.hybrid import HybridRetriever, RetrievalDepths
from backend.retrieval.rerank import build_reranker
from backend.retrieval.sparse import ParentSparseRetriever, SparseRetriever
from backend.retrieval.tokenize import Tokenizer
from backend.startup import prepare_data_dir
from backend.stores.bm25 import BM25Store
from backend.stores.chats import ChatStore
from backend.stores.chroma import ChromaStore
from backend.stores.database import open_database
from backend.stores.documents import DocumentStore
from backend.stores.jobs import JobStore
from backend.stores.memory import MemoryStore
from backend.stores.users import UserStore

log = logging.getLogger(__name__)


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
    memory: MemoryStore
    chats: ChatStore
    llm: ScheduledLLM
    pipeline: RAGPipeline
    reader: DocumentReader
    jobs: JobStore  # background ingestion jobs, beside the documents they make
    users: UserStore  # API keys and who they belong to (used when AXIOM_AUTH=api-key)
    database: Engine  # what chats, memory, documents, jobs and users are stored in (SQLite or PostgreSQL)

    def close(self) -> None:
        self.reader.close()
        self.llm.close()
        self.database.dispose()


def _llm_verifier(llm: ScheduledLLM):
    def verify(answer: str, sources) -> str:
        prompt: ChatMessage = {"role": "user", "content": format_check_prompt(answer, sources)}
        return llm.complete([prompt], GenerationParams(max_tokens=160, temperature=0.0))

    return verify


def _warn_if_vectors_are_not_shared(settings: Settings, database: Engine) -> None:
    """A shared database is how replicas run, and they must share the vectors too: with an embedded Chroma each
    would search only what was uploaded through it (its questions falling back on BM25 for the rest)."""
    if database.dialect.name == "postgresql" and settings.chroma_host is None:
        log.warning(
            "The database is shared (PostgreSQL) but the vectors are in an embedded Chroma under %s: other "
            "replicas on this database will not see them. Give every replica one Chroma server "
            "(AXIOM_CHROMA_HOST, AXIOM_CHROMA_PORT).", settings.chroma_path,
        )


def build_services(
    settings: Settings, *, embedder: Embedder | None = None, llm: LLM | None = None,
    reader: DocumentReader | None = None,
) -> Services:
    """``embedder``, ``llm`` and ``reader`` let tests share loaded models and reader processes across many
    temporary containers."""
    prepare_data_dir(settings.data_dir)
    # The stores first: a server that cannot be reached is told before the models load.
    vectors = ChromaStore.from_settings(settings)
    database = open_database(settings)
    embedder = embedder or build_embedder(settings)
    # Every call on the model goes through one scheduler, whichever part of Axiom makes it.
    llm = ScheduledLLM(llm or build_llm(settings), LLMScheduler(settings.llm_slots))
    _warn_if_vectors_are_not_shared(settings, database)
    documents = DocumentStore(database)
    keywords = BM25Store(settings.bm25_dir, Tokenizer(), documents)
    keywords.import_legacy_files()
    jobs = JobStore(database)
    chunker = ParentChildChunker(
        settings.parent_chunk_size, settings.parent_chunk_overlap,
        settings.child_chunk_size, settings.child_chunk_overlap,
    )
    reader = reader or DocumentReader(ReaderLimits(
        workers=settings.reader_workers, files_per_worker=settings.reader_files_per_worker,
        memory_bytes=settings.reader_memory_limit_mb * 1024 * 1024, seconds=settings.reader_timeout_seconds,
    ))
    ingestion = IngestionService(
        chunker=chunker, embedder=embedder, vectors=vectors, keywords=keywords, documents=documents,
        load=functools.partial(reader.read, ocr=ocr_options(settings)),
    )
    # Several replicas may share a database: what another is storing right now is not rolled back.
    ingestion.recover(keep=set(jobs.unfinished_ids()))
    dense = DenseRetriever(embedder, vectors)
    sparse = SparseRetriever(keywords)
    retriever = HybridRetriever(
        dense,
        sparse,
        make_fuser(
            settings.fusion_method, dense_weight=settings.dense_weight, rrf_k=settings.rrf_k,
            bm25_parent_share=settings.bm25_parent_share,
        ),
        documents,
        build_reranker(settings.reranker, embedder, settings.cross_encoder_model),
        RetrievalDepths(
            vector_k=settings.retrieval_vector_k, bm25_k=settings.retrieval_bm25_k,
            bm25_parent_k=settings.retrieval_bm25_parent_k, initial_k=settings.retrieval_initial_k,
            final_k=settings.retrieval_final_k, relevance_threshold=settings.relevance_threshold,
        ),
        parent_sparse=ParentSparseRetriever(keywords) if settings.bm25_parent_share > 0 else None,
    )
    memory = MemoryStore(database)
    capable = settings.llm_decides_quality
    deps = RAGDeps(
        retriever=retriever,
        documents=documents,
        memory=memory,
        llm=llm,
        router=IntentRouter(
            embedder, llm if capable else None,
            threshold=settings.intent_threshold, neighbours=settings.intent_neighbours,
        ),
        checker=GroundednessChecker(
            _llm_verifier(llm) if capable else None, support_at=settings.hallucination_threshold
        ),
        embedder=embedder,
        limits=GenerationLimits(
            answer_max_tokens=settings.answer_max_tokens, context_budget_tokens=settings.context_budget_tokens,
            max_retries=settings.max_retries, summary_map_calls=settings.summary_map_calls,
            queue_patience_seconds=settings.llm_queue_patience_seconds,
        ),
        answerability=answerability_policy(settings),
        answerability_judge=settings.answerability_judge,
        jobs=jobs,
    )
    return Services(
        settings, embedder, vectors, keywords, documents, ingestion, dense, sparse, retriever, memory,
        ChatStore(database), llm, RAGPipeline(deps), reader, jobs, UserStore(database),
        database,
    )


def ocr_options(settings: Settings) -> OcrOptions:
    return OcrOptions(
        tesseract=settings.ocr_tesseract_path, languages=settings.ocr_languages, dpi=settings.ocr_dpi,
        page_seconds=settings.ocr_page_timeout_seconds,
    )


def answerability_policy(settings: Settings) -> AnswerabilityPolicy:
    return AnswerabilityPolicy(
        min_coverage=settings.answer_min_coverage, min_similarity=settings.answer_min_similarity,
        relevance_margin=settings.relevance_margin,
    )

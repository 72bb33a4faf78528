"""Everything the graph's nodes need, built once and handed to each node (no globals)."""

from __future__ import annotations

from dataclasses import dataclass, field

from backend.embeddings import Embedder
from backend.llm.scheduled import ScheduledLLM
from backend.rag.answerability import AnswerabilityPolicy
from backend.rag.answerability_judge import AnswerabilityJudge
from backend.rag.grounding import GroundednessChecker
from backend.rag.intent import IntentRouter
from backend.retrieval.hybrid import HybridRetriever
from backend.stores.documents import DocumentStore
from backend.stores.jobs import JobStore
from backend.stores.memory import MemoryStore, MemoryWindows


@dataclass(frozen=True)
class GenerationLimits:
    answer_max_tokens: int = 384
    context_budget_tokens: int = 500  # tokens of numbered sources in a prompt (see Settings)
    max_retries: int = 2  # regenerations after an answer fails the groundedness check
    summary_map_calls: int = 6  # at most this many partial summaries when a chat's documents do not fit
    queue_patience_seconds: float | None = 60.0  # longest wait for the model before the evidence answers instead


@dataclass(frozen=True)
class RAGDeps:
    retriever: HybridRetriever
    documents: DocumentStore
    memory: MemoryStore
    llm: ScheduledLLM
    router: IntentRouter
    checker: GroundednessChecker
    embedder: Embedder
    windows: MemoryWindows = field(default_factory=MemoryWindows)
    limits: GenerationLimits = field(default_factory=GenerationLimits)
    answerability: AnswerabilityPolicy = field(default_factory=AnswerabilityPolicy)
    answerability_judge: AnswerabilityJudge = "evidence"  # who decides: the rules, the model, or both
    # Files still being indexed in the background: not searched yet, which a "not found" reply must say.
    jobs: JobStore | None = None

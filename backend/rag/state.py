"""RAGState: what flows through the graph (seed §10), plus the few fields Axiom adds (marked)."""

from __future__ import annotations

from operator import add
from typing import Annotated, Literal, TypedDict

from backend.llm.base import ChatMessage
from backend.models import Passage

Complexity = Literal["simple", "complex", "conversational", "summarize", "garbage"]
# How the answer came to be; the API and UI show each differently (Axiom addition).
AnswerKind = Literal["generated", "extractive", "fixed", "not_found", "transformed"]
# Why an answer is the evidence: the written one was not supported, or the model was too busy to write one; or,
# for a not-found answer, that the passages it shows are the closest found and do not answer.
EvidenceReason = Literal["unsupported", "busy", "closest"]


class RAGState(TypedDict, total=False):
    # Input
    question: str
    session_id: str
    chat_id: str  # Axiom addition: the chat whose documents are searched
    collection_name: str

    # Intent classification
    detected_intent: str | None  # a backend.rag.intent.Intent value
    intent_confidence: float
    intent_layer: str  # Axiom addition: "rules" | "exemplars" | "llm" | "default"
    history: list[ChatMessage]  # Axiom addition: recent messages, read once from memory by the intent node

    # Router agent
    query_complexity: Complexity | None
    skip_rewrite: bool
    is_summarization: bool
    is_garbage_query: bool

    # Query processing
    rewritten_query: str | None
    query_type: str | None

    # Retrieval
    retrieved_documents: list[Passage]
    relevant_documents: list[Passage]
    collection_empty: bool
    answerable: bool  # Axiom addition: some sentence of the relevant passages answers the question
    answer_sentence: str | None  # Axiom addition: that sentence, always among the quoted evidence

    # Evidence (Axiom addition): quoted sentences shown before the model's turn, and the passages they number
    evidence: str
    evidence_documents: list[Passage]

    # Generation
    model_busy: bool  # Axiom addition: the wait for the model exceeded its patience; the evidence is the answer
    answer: str | None
    sources: list[dict]
    answer_kind: AnswerKind  # Axiom addition
    answer_synthesized: bool  # Axiom addition: False when no LLM wrote the answer
    evidence_reason: EvidenceReason  # Axiom addition: why an extractive answer is one

    # Validation
    is_grounded: bool
    others_waiting: bool  # Axiom addition: someone was waiting for the model when the answer was checked
    groundedness_score: float
    hallucination_details: str
    fast_groundedness_score: float
    skip_llm_hallucination_check: bool

    # Control flow
    iteration: int
    max_iterations: int
    should_rewrite: bool
    rewrite_count: int

    # Metadata, accumulated across nodes
    errors: Annotated[list[str], add]
    processing_steps: Annotated[list[str], add]

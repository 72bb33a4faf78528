"""Runs the graph for one message: streamed events for the API and CLI, or one finished answer."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

from backend.ids import collection_name, validate_id
from backend.llm.scheduler import TurnCancelled
from backend.rag.deps import RAGDeps
from backend.rag.graph import build_graph
from backend.rag.nodes.events import GenerationCancelled, run_config
from backend.rag.state import RAGState


@dataclass(frozen=True)
class RAGAnswer:
    answer: str
    sources: list[dict]
    answer_kind: str
    answer_synthesized: bool
    evidence_reason: str | None
    is_grounded: bool
    groundedness_score: float
    intent: str
    intent_confidence: float
    query_complexity: str | None
    is_summarization: bool
    iterations: int
    processing_time_ms: int
    processing_steps: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @classmethod
    def from_state(cls, state: RAGState, started: float) -> RAGAnswer:
        return cls(
            answer=state["answer"],
            sources=state.get("sources", []),
            answer_kind=state.get("answer_kind", "generated"),
            answer_synthesized=state.get("answer_synthesized", False),
            evidence_reason=state.get("evidence_reason"),
            is_grounded=state.get("is_grounded", True),
            groundedness_score=round(state.get("groundedness_score", 1.0), 4),
            intent=state["detected_intent"],
            intent_confidence=round(state.get("intent_confidence", 0.0), 4),
            query_complexity=state.get("query_complexity"),
            is_summarization=state.get("is_summarization", False),
            iterations=state.get("iteration", 0),
            processing_time_ms=int((time.perf_counter() - started) * 1000),
            processing_steps=state.get("processing_steps", []),
            errors=state.get("errors", []),
        )

    def as_dict(self) -> dict:
        return asdict(self)


class RAGPipeline:
    def __init__(self, deps: RAGDeps) -> None:
        self.deps = deps
        self._graph = build_graph(deps)

    def stream(
        self, question: str, *, chat_id: str, session_id: str, cancel: threading.Event | None = None
    ) -> Iterator[dict]:
        """Events as they happen — {"type": "status"|"sources"|"evidence"|"token"|"retry", ...} — then {"type":
        "result", "result": RAGAnswer}. Closing the iterator early, or setting ``cancel`` (which also reaches a
        question still waiting for the model), stops the run: generation stops and nothing is saved; a cancelled
        run ends without a result."""
        validate_id(session_id, field="session_id")
        started = time.perf_counter()
        initial: RAGState = {
            "question": question,
            "session_id": session_id,
            "chat_id": chat_id,
            "collection_name": collection_name(chat_id),
            "iteration": 0,
            "max_iterations": self.deps.limits.max_retries,
            "rewrite_count": 0,
        }
        cancel = cancel or threading.Event()
        final: RAGState = {}
        events = self._graph.stream(initial, config=run_config(cancel), stream_mode=["custom", "values"])
        try:
            for mode, chunk in events:
                if mode == "custom":
                    yield chunk
                else:
                    final = chunk
        except (GenerationCancelled, TurnCancelled):
            return
        finally:
            # Order matters: closing the graph's stream waits for the running node, which only stops once the
            # cancel event is set (no-op after a finished run).
            cancel.set()
            events.close()
        yield {"type": "result", "result": RAGAnswer.from_state(final, started)}

    def run(self, question: str, *, chat_id: str, session_id: str) -> RAGAnswer:
        for event in self.stream(question, chat_id=chat_id, session_id=session_id):
            if event["type"] == "result":
                return event["result"]
        raise RuntimeError("the graph ended without a result")

"""Answering one message for the API: validation first, then the pipeline; a failed run keeps the question.

The pipeline saves the question and the answer together when a run completes, and nothing when the client stops
it. When the run fails instead (the LLM timed out, retrieval broke), the question is saved alone here, so the
user's message is not lost from the history even though no answer came.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass

from backend.errors import ValidationFailed
from backend.ids import validate_id
from backend.rag.pipeline import RAGAnswer, RAGPipeline
from backend.stores.memory import MemoryStore

log = logging.getLogger(__name__)

# How far back the stored answer is looked for: other requests in the same session may have written since.
_ANSWER_LOOKBACK = 10


@dataclass(frozen=True, slots=True)
class Question:
    message: str
    chat_id: str
    session_id: str


@dataclass(frozen=True, slots=True)
class Answered:
    answer: RAGAnswer
    message_id: str


class Answerer:
    def __init__(self, pipeline: RAGPipeline, memory: MemoryStore, *, max_chars: int) -> None:
        self._pipeline = pipeline
        self._memory = memory
        self._max_chars = max_chars

    def question(self, message: str, *, chat_id: str, session_id: str | None) -> Question:
        """Raises ValidationFailed (400) before anything runs or is saved."""
        text = message.strip()
        if not text or len(text) > self._max_chars:
            raise ValidationFailed(
                f"message must be non-blank and at most {self._max_chars} characters.",
                field="message", max_chars=self._max_chars,
            )
        return Question(
            message=text,
            chat_id=validate_id(chat_id, field="chat_id"),
            session_id=validate_id(session_id, field="session_id") if session_id is not None else uuid.uuid4().hex,
        )

    def events(self, question: Question) -> Iterator[dict]:
        """The pipeline's events; the last is {"type": "result", "result": RAGAnswer, "message_id": str}.

        Closing this iterator closes the pipeline's, which stops generation and saves nothing.
        """
        run = self._pipeline.stream(question.message, chat_id=question.chat_id, session_id=question.session_id)
        with closing(run):
            try:
                for event in run:
                    if event["type"] == "result":
                        event = {**event, "message_id": self._stored_answer_id(question, event["result"])}
                    yield event
            except Exception:
                self._keep_question(question)
                raise

    def answer(self, question: Question) -> Answered:
        for event in self.events(question):
            if event["type"] == "result":
                return Answered(event["result"], event["message_id"])
        raise RuntimeError("the pipeline ended without a result")

    def _keep_question(self, question: Question) -> None:
        try:
            self._memory.keep_unanswered(question.session_id, question.message)
        except Exception:  # the original failure is the one the client must hear about
            log.exception("could not save the unanswered question of session %s", question.session_id)

    def _stored_answer_id(self, question: Question, answer: RAGAnswer) -> str:
        for message in reversed(self._memory.recent(question.session_id, _ANSWER_LOOKBACK)):
            if message.role == "assistant" and message.content == answer.answer:
                return message.id
        # Only when many concurrent requests in one session pushed the answer out of view.
        return uuid.uuid4().hex

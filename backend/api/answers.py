"""Answering one message for the API: validation, admission and the session's chat first, then the pipeline; a
failed run keeps the question.

The pipeline saves the question and the answer together when a run completes, and nothing when the client stops
it. When the run fails instead (the model got stuck, retrieval broke), the question is saved alone here, so the
user's message is not lost from the history even though no answer came.

Admission is the queue's hard bound: past ``max_in_flight`` questions being answered at once, a new one is refused
with 503 SERVER_BUSY and a Retry-After before anything runs. Below it nobody is refused: waiting for the model is
the scheduler's business, and a question that would wait too long gets the evidence answer instead.

A session answers for one chat only (backend/conversations.py): asking with another chat's session is refused
before anything runs. With API keys on, so is asking in another user's chat; a chat asked in for the first time
becomes the asker's (backend/api/chats.py).
"""

from __future__ import annotations

import logging
import math
import threading
import unicodedata
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass

from backend.api.chats import Chats
from backend.api.running_answers import RunningAnswers
from backend.conversations import Conversations
from backend.errors import ServerBusy, ValidationFailed
from backend.ids import validate_id
from backend.llm.scheduler import LLMScheduler
from backend.rag.pipeline import RAGAnswer, RAGPipeline
from backend.stores.memory import MemoryStore
from backend.stores.users import User

log = logging.getLogger(__name__)

# How far back the stored answer is looked for: other requests in the same session may have written since.
_ANSWER_LOOKBACK = 10
# Retry-After when the model's pace is not known yet, and the range it is kept in.
_DEFAULT_RETRY_AFTER_SECONDS = 30
_RETRY_AFTER_RANGE = (5, 300)


@dataclass(frozen=True, slots=True)
class Question:
    message: str
    chat_id: str
    session_id: str


@dataclass(frozen=True, slots=True)
class Answered:
    answer: RAGAnswer
    message_id: str


# The rules a message breaks, as the 400's message states them (also for the schema's checks, backend/api/errors.py).
HAS_TEXT_RULE = "should have some text, not only spaces or control characters"
NO_SURROGATE_RULE = "should be text without a lone surrogate such as \\ud800"


def is_blank(character: str) -> bool:
    """Whitespace or a control character (NUL, escape, …): nothing a person wrote."""
    return character.isspace() or unicodedata.category(character) == "Cc"


def has_text(message: str) -> bool:
    return not all(map(is_blank, message))


def is_unicode(message: str) -> bool:
    """False for text holding half of a UTF-16 surrogate pair, which JSON can spell ("\\ud800") but no store can
    keep."""
    try:
        message.encode()
    except UnicodeEncodeError:
        return False
    return True


def _message_problem(text: str, max_chars: int) -> str | None:
    """The rule a stripped message breaks, if any."""
    if not has_text(text):
        return HAS_TEXT_RULE
    if len(text) > max_chars:
        return f"should have at most {max_chars} characters"
    if not is_unicode(text):
        return NO_SURROGATE_RULE
    return None


class Answerer:
    def __init__(
        self,
        pipeline: RAGPipeline,
        memory: MemoryStore,
        conversations: Conversations,
        chats: Chats,
        scheduler: LLMScheduler,
        *,
        max_chars: int,
        max_in_flight: int,
        default_chat_id: str,
        running: RunningAnswers,
    ) -> None:
        """``running``: the answers being written, shared with ``chats``, whose deletion stops them."""
        self._pipeline = pipeline
        self._memory = memory
        self._conversations = conversations
        self._chats = chats
        self._scheduler = scheduler
        self._max_chars = max_chars
        self._max_in_flight = max_in_flight
        self._default_chat_id = default_chat_id
        self._in_flight = 0
        self._counting = threading.Lock()
        self._running = running

    def question(
        self, message: str, *, chat_id: str | None, session_id: str | None, user: User | None = None,
        message_field: str = "message", message_subject: str = "",
    ) -> Question:
        """``chat_id`` None: the asker's default chat; ``message_field``: the body's field the message came
        from, named by a 400 about it, with ``message_subject`` the part of it that is the message (for a
        list). Raises ValidationFailed (400), ServerBusy (503), SessionOfAnotherChat or NotFound for
        another user's chat (404), Conflict for a new chat under another chat's session id (409),
        ChatWasDeleted (410) before anything runs or is saved (only a new session's binding to its chat,
        and then a new chat's owner, are: a question refused makes no chat)."""
        text = message.strip()
        problem = _message_problem(text, self._max_chars)
        if problem is not None:
            subject = f"{message_subject} " if message_subject else ""
            raise ValidationFailed(
                f"Invalid {message_field}: {subject}{problem}.", field=message_field, max_chars=self._max_chars
            )
        default = chat_id is None
        chat_id = validate_id(chat_id or self._default_chat(user), field="chat_id")
        if session_id is not None:
            validate_id(session_id, field="session_id")
        self._ensure_room()
        made_again = self._chats.usable(chat_id, user, default=default)
        session_id = self._conversations.session_for(chat_id, session_id)
        self._chats.claim(chat_id, user, default=default, made_again=made_again)
        return Question(message=text, chat_id=chat_id, session_id=session_id)

    def _default_chat(self, user: User | None) -> str:
        """The chat a question goes to when it names none. With keys on each user has their own, so one user's
        questions never land in another's chat."""
        return self._default_chat_id if user is None else f"{self._default_chat_id}-{user.user_id}"

    def _ensure_room(self) -> None:
        with self._counting:
            if self._in_flight < self._max_in_flight:
                return
        expected = self._scheduler.expected_wait()
        retry_after = _DEFAULT_RETRY_AFTER_SECONDS if expected is None else math.ceil(expected)
        raise ServerBusy(
            "Axiom is answering as many questions as it can right now. Please ask again in a minute.",
            retry_after_seconds=min(max(retry_after, _RETRY_AFTER_RANGE[0]), _RETRY_AFTER_RANGE[1]),
        )

    @contextmanager
    def _answering(self) -> Iterator[None]:
        with self._counting:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._counting:
                self._in_flight -= 1

    def events(self, question: Question, cancel: threading.Event | None = None) -> Iterator[dict]:
        """The pipeline's events; the last is {"type": "result", "result": RAGAnswer, "message_id": str}.

        Closing this iterator closes the pipeline's, which stops generation and saves nothing; setting ``cancel``
        does the same from another thread, and also reaches a question still waiting for the model (the events
        then end without a result).
        """
        cancel = cancel or threading.Event()
        run = self._pipeline.stream(
            question.message, chat_id=question.chat_id, session_id=question.session_id, cancel=cancel
        )
        answered = False
        with self._answering(), self._running.running(question.chat_id, cancel) as answering, closing(run):
            try:
                for event in run:
                    if event["type"] == "result":
                        event = {**event, "message_id": self._stored_answer_id(question, event["result"])}
                        answered = True
                    yield event
            except Exception as error:
                self._keep_question(question)
                if answering.chat_deleted:  # the step's error is the deletion's doing
                    raise self._chats.deleted_while_answering(question.chat_id) from error
                raise
        if answering.chat_deleted and not answered:
            raise self._chats.deleted_while_answering(question.chat_id)

    def answer(self, question: Question) -> Answered:
        for event in self.events(question):
            if event["type"] == "result":
                return Answered(event["result"], event["message_id"])
        raise RuntimeError("the pipeline ended without a result")

    def _keep_question(self, question: Question) -> None:
        try:
            self._memory.keep_unanswered(question.session_id, question.message, chat_id=question.chat_id)
        except Exception:  # the original failure is the one the client must hear about
            log.exception("could not save the unanswered question of session %s", question.session_id)

    def _stored_answer_id(self, question: Question, answer: RAGAnswer) -> str:
        for message in reversed(self._memory.recent(question.session_id, _ANSWER_LOOKBACK)):
            if message.role == "assistant" and message.content == answer.answer:
                return message.id
        # Only when many concurrent requests in one session pushed the answer out of view.
        return uuid.uuid4().hex

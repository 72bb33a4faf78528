"""Request and response bodies of the HTTP API (seed §14), as they appear in the OpenAPI document at /docs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from typing_extensions import TypedDict

from backend.api.answers import HAS_TEXT_RULE, is_blank
from backend.api.chats import MAX_TITLE_CHARS, Chat, DeletedChat
from backend.errors import AxiomError
from backend.ids import COLLECTION_PREFIX, ID_MAX_LENGTH, ID_PATTERN, ID_RULE
from backend.ingest.jobs import Job
from backend.ingest.service import IngestedDocument
from backend.rag.pipeline import RAGAnswer
from backend.stores.documents import READY, DocumentRecord
from backend.stores.jobs import JobState
from backend.stores.memory import StoredMessage

# A chat, document or session id as every route and body declares it (the rule of backend/ids.py).
Id = Annotated[
    str, StringConstraints(pattern=ID_PATTERN, min_length=1, max_length=ID_MAX_LENGTH), Field(description=ID_RULE)
]

# The longest question, in characters. A constant, not a setting: the OpenAPI document states it to generated
# clients, and that document is the same for every deployment.
MESSAGE_MAX_CHARS = 2000
# Whitespace as the services strip it (str.strip(), str.isspace()), spelled out: \s means a different set in
# Python, in pydantic's regex engine and in the ECMA-262 dialect of JSON Schema that clients and schemathesis use,
# so a pattern with \s would let through text that the service, once it has stripped it, finds blank.
_SPACE = "".join(f"\\u{ord(c):04x}" for c in map(chr, range(0x10000)) if c.isspace())
# At least one character that is not whitespace (a JSON Schema pattern matches anywhere in the string).
NON_BLANK = f"[^{_SPACE}]"
# A message's: at least one character that is neither whitespace nor a control character (is_blank in
# backend/api/answers.py; like whitespace, every control character, Unicode category Cc, is in the BMP).
_BLANK = "".join(f"\\u{ord(c):04x}" for c in map(chr, range(0x10000)) if is_blank(c))
HAS_TEXT = f"[^{_BLANK}]"
# A title once trimmed: one line of a non-blank first and last character with at most MAX_TITLE_CHARS - 2 between
# them, none a control character (a NUL, a line break or an escape sequence would reach every chat list as is).
# Unicode's line and paragraph separators (U+2028, U+2029) end a line as a line feed does.
_CONTROL = "\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029"
TITLE_PATTERN = (
    f"^[{_SPACE}]*[^{_SPACE}{_CONTROL}]"
    f"(?:[^{_CONTROL}]{{0,{MAX_TITLE_CHARS - 2}}}[^{_SPACE}{_CONTROL}])?[{_SPACE}]*$"
)
# The legacy stream's collection name: the prefix and a chat id.
COLLECTION_PATTERN = f"^{COLLECTION_PREFIX}{ID_PATTERN.removeprefix('^')}"


class ErrorBody(BaseModel):
    error: str = Field(examples=["VALIDATION_ERROR"])
    message: str
    details: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, error: AxiomError) -> ErrorBody:
        return cls(**error.to_body())


RETRY_AFTER = {
    "Retry-After": {
        "description": "With SERVER_BUSY or DATABASE_UNAVAILABLE: seconds to wait before asking again",
        "schema": {"type": "integer"},
    }
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the error statuses a route can answer with."""
    return {status: {"model": ErrorBody, **({"headers": RETRY_AFTER} if status == 503 else {})} for status in statuses}


# --- health -------------------------------------------------------------------------------------------------


class EmbeddingInfo(BaseModel):
    provider: str
    model: str


class RetrievalInfo(BaseModel):
    fusion: str
    reranker: str


class Health(BaseModel):
    """Always 200 while the service answers: with Chroma down, questions are still answered from BM25 alone."""

    status: Literal["ok", "degraded"] = Field(
        description='"degraded": a part is down (see vector_store_reachable); answers rely on what is left'
    )
    documents: int
    chunks: int
    llm: str
    embedding: EmbeddingInfo
    vector_store: Literal["chroma-embedded", "chroma-server"]
    vector_store_reachable: bool = Field(
        description="The Chroma server answered a heartbeat within AXIOM_CHROMA_TIMEOUT_SECONDS; always true "
        "for the embedded store"
    )
    retrieval: RetrievalInfo


# The rule each declared pattern spells, for the 400's message: pydantic quotes the regex itself.
PATTERN_RULES = {
    ID_PATTERN: f"should be {ID_RULE}",
    NON_BLANK: "should not be blank",
    HAS_TEXT: HAS_TEXT_RULE,
    TITLE_PATTERN: f"should be one line of 1-{MAX_TITLE_CHARS} characters once trimmed, without control characters",
    COLLECTION_PATTERN: f"should be '{COLLECTION_PREFIX}' followed by a chat id ({ID_RULE})",
}

# --- chat ---------------------------------------------------------------------------------------------------


class ChatStreamRequest(BaseModel):
    # A misspelt field ("chatId", the seed's "collection_name" on /chat/) is refused: ignored, the question went
    # to the default chat without a word.
    model_config = ConfigDict(extra="forbid")

    message: str = Field(
        min_length=1, max_length=MESSAGE_MAX_CHARS, pattern=HAS_TEXT,
        description=f"The question: some text (not only spaces or control characters), at most {MESSAGE_MAX_CHARS} "
        "characters",
    )
    session_id: Id | None = Field(None, description="Conversation id; a new one is made when absent")


class ChatRequest(ChatStreamRequest):
    chat_id: Id | None = Field(None, description='Whose documents are searched; absent: the chat "default"')


class LegacyStreamRequest(ChatStreamRequest):
    collection_name: str = Field(
        pattern=COLLECTION_PATTERN,
        max_length=len(COLLECTION_PREFIX) + ID_MAX_LENGTH,
        description=f'The chat\'s collection, "{COLLECTION_PREFIX}{{chat_id}}"', examples=["chat_demo"],
    )


class SourcePassage(BaseModel):
    source_number: int
    parent_id: str
    page: int
    page_label: str = Field(
        description='How the page is cited: "Page 3", "Slide 3", "Sheet “Q3 sales”", an e-book chapter\'s title, '
        '"Frame 2" of a multi-page TIFF',
    )
    excerpt: str
    ocr: bool = Field(False, description="The passage's page was read by text recognition (OCR) from an image")


class Source(BaseModel):
    """One cited document; ``page`` and ``chunk_id`` are those of its first cited passage."""

    filename: str
    chunk_id: str
    relevance_score: float
    content_preview: str
    page: int
    page_label: str = Field(description="The label of `page` (see the passages' `page_label`)")
    document_id: str
    pages: list[int]
    page_labels: list[str] = Field(description="The label of each of `pages`, in the same order")
    source_numbers: list[int]
    passages: list[SourcePassage]
    ocr: bool = Field(False, description="Some of its cited passages were read by text recognition (OCR)")


class ChatResponse(BaseModel):
    message_id: str = Field(description="Id of the answer in the session's history")
    answer: str
    sources: list[Source]
    session_id: str
    was_grounded: bool
    confidence: float = Field(description="Groundedness score, 0..1")
    processing_time_ms: int
    intent: str
    iterations: int
    answer_kind: str = Field(description="generated | extractive | fixed | not_found | transformed")
    evidence_reason: Literal["unsupported", "busy", "closest"] | None = Field(
        description="Why an extractive answer quotes the documents: the written answer was not supported, or the "
        "model was too busy to write one; for not_found, 'closest' when the answer lists the closest passages, "
        "which are about the topic but do not answer; null otherwise"
    )
    query_complexity: str | None
    is_summarization: bool

    @classmethod
    def of(cls, answer: RAGAnswer, *, session_id: str, message_id: str) -> ChatResponse:
        return cls(
            message_id=message_id, answer=answer.answer, sources=[Source(**s) for s in answer.sources],
            session_id=session_id, was_grounded=answer.is_grounded, confidence=answer.groundedness_score,
            processing_time_ms=answer.processing_time_ms, intent=answer.intent, iterations=answer.iterations,
            answer_kind=answer.answer_kind, evidence_reason=answer.evidence_reason,
            query_complexity=answer.query_complexity,
            is_summarization=answer.is_summarization,
        )


class HistoryMessage(BaseModel):
    id: str
    role: Literal["user", "assistant"]
    content: str
    metadata: dict[str, Any]
    timestamp: str

    @classmethod
    def of(cls, message: StoredMessage) -> HistoryMessage:
        return cls(
            id=message.id, role=message.role, content=message.content, metadata=message.metadata,
            timestamp=message.timestamp,
        )


class History(BaseModel):
    session_id: str
    messages: list[HistoryMessage]


class HistoryCleared(BaseModel):
    session_id: str
    deleted: int = Field(description="How many messages were removed")


# --- documents ----------------------------------------------------------------------------------------------


class UploadedDocument(BaseModel):
    id: str
    name: str
    chunk_count: int
    page_count: int
    duplicate: bool = Field(description="The same content was already in this chat; nothing new was stored")

    @classmethod
    def of(cls, document: IngestedDocument) -> UploadedDocument:
        return cls(
            id=document.document_id, name=document.filename, chunk_count=document.chunk_count,
            page_count=document.page_count, duplicate=document.duplicate,
        )


class FailedUpload(BaseModel):
    name: str
    error: ErrorBody


class DocumentState(BaseModel):
    """A document or a background job, by id: where it stands on its way into the chat."""

    id: str = Field(description="The id asked about: a job id or a document id")
    name: str
    status: JobState
    percent: int = Field(ge=0, le=100)
    document_id: str | None = Field(None, description="Set once the document is ready")
    chunk_count: int | None = None
    page_count: int | None = None
    error: ErrorBody | None = Field(
        None, description="Why the job failed; or, while it waits to be tried again, why its last try did not finish"
    )
    retry_at: float | None = Field(
        None, description="Set while a queued job waits to be tried again because the vector store was unreachable: "
        "when (seconds since the epoch)",
    )

    @classmethod
    def of_job(cls, job: Job, document: DocumentRecord | None = None) -> DocumentState:
        """``document``: the registry's record of the document a ready job made (its page and chunk counts). A
        ready job whose document is gone was stopped as it finished (or its document deleted since): nothing of it
        is kept, which is what "cancelled" says."""
        status = "cancelled" if job.state == "ready" and document is None else job.state
        return cls(
            id=job.job_id, name=job.filename, status=status, percent=int(job.progress * 100),
            document_id=job.document_id,
            chunk_count=document.chunk_count if document else None,
            page_count=document.page_count if document else None,
            error=ErrorBody(**job.error) if job.error else None, retry_at=job.retry_at,
        )

    @classmethod
    def of_record(cls, record: DocumentRecord) -> DocumentState:
        """A registered document: ready, or still being indexed by an upload request."""
        ready = record.status == READY
        return cls(
            id=record.document_id, name=record.filename, status="ready" if ready else "indexing",
            percent=100 if ready else 0,
            document_id=record.document_id, chunk_count=record.chunk_count, page_count=record.page_count,
        )


class UploadResponse(BaseModel):
    uploaded: list[UploadedDocument] = Field(description="Indexed within this request")
    failed: list[FailedUpload]
    jobs: list[DocumentState] = Field(description="Indexing in the background (status 202); poll each by id")


class DocumentOut(BaseModel):
    id: str
    name: str
    file_type: str
    size_bytes: int
    page_count: int
    chunk_count: int
    created_at: float

    @classmethod
    def of(cls, record: DocumentRecord) -> DocumentOut:
        return cls(
            id=record.document_id, name=record.filename, file_type=record.file_type, size_bytes=record.size_bytes,
            page_count=record.page_count, chunk_count=record.chunk_count, created_at=record.created_at,
        )


class DocumentList(BaseModel):
    chat_id: str
    documents: list[DocumentOut] = Field(description="Ready documents, oldest first")
    jobs: list[DocumentState] = Field(description="Background jobs still queued or indexing")


class DocumentDeleted(BaseModel):
    id: str
    deleted: bool = True


# --- chats --------------------------------------------------------------------------------------------------


class ChatOut(BaseModel):
    """A chat as the web UI lists it."""

    id: str = Field(description="The chat_id of its document and ask routes")
    title: str = Field(description="Its id until it is named, for a chat that began with an upload")
    session_id: str = Field(
        description="The history session holding the chat's conversation: the UI asks with session_id = the chat "
        "id, so it always equals id, and deleting the chat clears that session"
    )
    document_count: int = Field(description="Ready documents")
    created_at: float = Field(description="Unix time; for a chat that began with an upload, its first document's")
    updated_at: float = Field(description="Unix time of the last rename (or creation)")

    @classmethod
    def of(cls, chat: Chat) -> ChatOut:
        return cls(
            id=chat.id, title=chat.title, session_id=chat.id, document_count=chat.document_count,
            created_at=chat.created_at, updated_at=chat.updated_at,
        )


class ChatList(BaseModel):
    chats: list[ChatOut] = Field(description="Most recently updated first")


Title = Annotated[
    str,
    Field(
        pattern=TITLE_PATTERN,
        description=f"1-{MAX_TITLE_CHARS} characters after trimming, on one line, without control characters",
    ),
]


class NewChat(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: Title | None = Field(None, description='Absent: "New chat"')
    id: Id | None = Field(
        None, description="Absent: a new random id. Given: the chat's id, also one of a deleted chat (which "
        "an upload or a question does not make again: 410); 409 while a chat of that id exists, or while it is the id "
        "of another chat's session",
    )


class ChatRename(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: Title


class ChatDeleted(BaseModel):
    id: str
    deleted: bool = True
    documents_deleted: int
    messages_deleted: int = Field(description="Messages removed from the chat's history session")

    @classmethod
    def of(cls, deleted: DeletedChat) -> ChatDeleted:
        return cls(
            id=deleted.id, documents_deleted=deleted.documents_deleted, messages_deleted=deleted.messages_deleted
        )


# --- OpenAI-compatible --------------------------------------------------------------------------------------


class TextPart(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None


class CompletionMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[TextPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text or "" for part in self.content if part.type == "text")
        return self.content or ""


class CompletionMetadata(TypedDict, total=False):
    """OpenAI's free-form metadata (string values); the two keys Axiom reads are ids."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]

    chat_id: Id
    session_id: Id


class ChatCompletionRequest(BaseModel):
    """The fields Axiom reads; the other OpenAI parameters (temperature, max_tokens, …) are accepted and ignored:
    the pipeline decides how it generates."""

    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[CompletionMessage] = Field(
        min_length=1,
        # Checked by the route (the question is the last user message); stated here for clients.
        json_schema_extra={"contains": {"type": "object", "properties": {"role": {"const": "user"}},
                                        "required": ["role"]}},
        description="At least one user message: the last one is the question, whose text (its content, or its "
        "text parts joined) must have some text, not only spaces or control characters, and at most "
        f"{MESSAGE_MAX_CHARS} characters once trimmed",
    )
    # Strict: "false" or "no" (a string, so truthy to many clients) was taken for a boolean, either way.
    stream: bool = Field(False, strict=True)
    # A client asking for several choices must not be handed one as if that were all.
    n: int | None = Field(None, ge=1, le=1, description="How many answers: one (each question is answered once)")
    metadata: CompletionMetadata | None = Field(
        None, description="chat_id (unless the X-Axiom-Chat-Id header is set) and optionally session_id"
    )

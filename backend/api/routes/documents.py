"""A chat's documents: upload (several at once, large ones in the background), list, look up, delete."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from backend.api.chats import document_not_found
from backend.api.deps import (
    ApiSettingsDep,
    ChatId,
    ChatsDep,
    DocId,
    DocumentChatId,
    JobsDep,
    ServicesDep,
    UploadsDep,
    UsableChatId,
    UserDep,
)
from backend.api.multipart import MAX_PASSWORD_CHARS, PASSWORD_FIELD, receive_files
from backend.api.schemas import (
    DocumentDeleted,
    DocumentList,
    DocumentOut,
    DocumentState,
    UploadResponse,
    error_responses,
)
from backend.ingest.loaders import FILE_TYPES_BY_EXTENSION
from backend.stores.documents import DISCARDED

router = APIRouter(tags=["documents"])

_UPLOAD_PATH = "/chat/{chat_id}/documents"
# The body is parsed by receive_files (as it streams), so FastAPI cannot derive its schema for /docs. Its limits
# are settings: declare_upload_limits adds them to the document.
_MULTIPART_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "files": {"type": "array", "items": {"type": "string", "format": "binary"}},
                        PASSWORD_FIELD: {
                            "type": "string", "format": "password", "writeOnly": True, "maxLength": MAX_PASSWORD_CHARS,
                            "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*$",  # no control character
                            "description": (
                                "Opens the request's PDFs that need a password to open (422 `encrypted` without "
                                "it, `wrong_password` when it does not open them); ignored by every other file. "
                                "Empty: none. Used only while the files are read, never stored beyond their "
                                "background jobs nor shown."
                            ),
                        },
                    },
                    "required": ["files"],
                }
            }
        },
    }
}


def declare_upload_limits(openapi: dict[str, Any], *, max_files: int, max_file_bytes: int) -> None:
    form = openapi["paths"][_UPLOAD_PATH]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    files = form["properties"]["files"]
    files.update(minItems=1, maxItems=max_files)
    files["items"]["maxLength"] = max_file_bytes
    files["description"] = (
        f"1 to {max_files} files ({', '.join(FILE_TYPES_BY_EXTENSION)}) of at most {max_file_bytes} bytes each "
        "(413 when larger); "
        "the type is judged by content (415 when unsupported, 422 when unreadable, or when a PDF needs a password "
        "that `password` does not give); each named by its part's `filename` (UTF-8, or RFC 5987 `filename*`), "
        "of which the base name is kept (400 when nothing is left of it once its path goes)"
    )


@router.post(
    _UPLOAD_PATH,
    response_model=UploadResponse,
    responses={202: {"model": UploadResponse, "description": "Some files are indexing in the background"},
               **error_responses(400, 404, 409, 410, 413, 415, 422, 503)},
    openapi_extra=_MULTIPART_BODY,
)
async def upload_documents(
    chat_id: UsableChatId,
    request: Request,
    services: ServicesDep,
    api: ApiSettingsDep,
    uploads: UploadsDep,
    user: UserDep,
    background: bool = False,
) -> JSONResponse:
    """One or more files (any field name), and perhaps the ``password`` of the PDFs among them that need one. A
    single file that cannot be indexed answers with its error's status;
    with several, the failures are listed under ``failed``. ``background=true`` indexes every file as a job.
    Makes the chat if it does not exist yet (unless no file goes in); 410 for a chat that was deleted."""
    with uploads.reservation() as reservation:
        upload = await receive_files(
            request, reservation, max_file_bytes=services.settings.max_upload_bytes,
            max_files=api.max_files_per_upload,
        )
        outcome = await run_in_threadpool(
            uploads.accept, chat_id, upload.files, background=background, user=user, password=upload.password
        )
        del upload  # garbage before the reservation ends, which gives the freed heap back
    return JSONResponse(outcome.body.model_dump(mode="json"), status_code=outcome.status)


@router.get(_UPLOAD_PATH, response_model=DocumentList, responses=error_responses(400, 404))
def list_documents(chat_id: ChatId, chats: ChatsDep) -> DocumentList:
    """404 for a chat that does not exist: nothing was ever uploaded or asked in it, or it was deleted."""
    contents = chats.contents(chat_id)
    return DocumentList(
        chat_id=chat_id,
        documents=[DocumentOut.of(record) for record in contents.documents],
        jobs=[DocumentState.of_job(job) for job in contents.jobs],
    )


@router.get("/chat/{chat_id}/documents/{doc_id}", response_model=DocumentState, responses=error_responses(400, 404))
def document_state(chat_id: DocumentChatId, doc_id: DocId, services: ServicesDep, jobs: JobsDep) -> DocumentState:
    """A background job's status and percent (by the id the upload returned), or a document's."""
    job = jobs.get(chat_id, doc_id)
    if job is not None:
        made = services.documents.get(chat_id, job.document_id) if job.document_id else None
        return DocumentState.of_job(job, made)
    record = services.documents.get(chat_id, doc_id)
    if record is None or record.status == DISCARDED:  # a dismissed job's, left to the sweep: never listed either
        raise document_not_found(doc_id)
    return DocumentState.of_record(record)


@router.delete(
    "/chat/{chat_id}/documents/{doc_id}", response_model=DocumentDeleted,
    responses={
        200: {"description": "The document deleted; or the job cancelled; or a job that had ended `failed` or "
              "`cancelled`, or `ready` with an earlier upload's document, dismissed (its GET is then a 404)"},
        **error_responses(400, 404, 409),
    },
)
def delete_document(chat_id: DocumentChatId, doc_id: DocId, uploads: UploadsDep) -> DocumentDeleted:
    """Removes the document from Chroma, BM25 and the registry (no original file is kept on disk). By a background
    job's id while it is queued or indexing: cancels it, and what it had done is rolled back (409 only if it is
    already storing its document and still is after a wait); the job then reads `cancelled`. By the id of a job
    that reads `failed` or `cancelled`: dismisses it (nothing of it was kept), so its GET is a 404 from then on."""
    uploads.remove(chat_id, doc_id)
    return DocumentDeleted(id=doc_id)

"""Limits that only the HTTP service has. Same AXIOM_ environment prefix and .env file as ``Settings``."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

import backend
from backend.config import ENV_PREFIX

_REPOSITORY_FRONTEND = Path(backend.__file__).resolve().parent.parent / "frontend"


class ApiSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_file=".env", extra="ignore")

    max_questions_in_flight: int = Field(
        256, gt=0,
        description="Questions answered at once; past it a new one gets 503 SERVER_BUSY with Retry-After. Below it "
        "nobody is refused: questions wait for the model, and those that would wait too long get the evidence answer",
    )
    max_files_per_upload: int = Field(10, gt=0, description="Files in one upload request")
    # ~300 child chunks (400 characters, 50 overlapping): 3-6 s to embed at 50-90 chunks/s (docs/benchmarks.md).
    # Judged on the text read, so a small file that expands to much text (a sheet of half a million cells in 2 MB)
    # is a job too; counted over the request's files, so ten of them are not embedded before the answer.
    background_ingest_chars: int = Field(
        100_000, ge=0,
        description="Characters of text, once read, an upload request indexes itself (all its files together); a "
        "file past them is indexed as a background job (202), and so is a scan with more than one page to recognise",
    )
    inline_read_seconds: float = Field(
        20.0, gt=0,
        description="How long an upload request waits for its files to be read (all together, queued behind other "
        "reads included) before leaving the rest to background jobs (202)",
    )
    ingest_workers: int = Field(1, gt=0, description="Threads indexing background jobs")
    ingest_lease_seconds: float = Field(
        30.0, gt=0,
        description="How long a background job stays with a worker that stopped renewing its lease (its server "
        "died) before another worker, in any replica, takes it over",
    )
    ingest_max_attempts: int = Field(
        3, gt=0, description="Times a background job is started before one interrupted again fails for good"
    )
    ingest_retry_seconds: float = Field(
        5.0, gt=0, le=60,
        description="How long a background job whose vector store (Chroma server) was unreachable waits before it "
        "is tried again; each later wait is as long as the outage so far (at most a minute)",
    )
    ingest_retry_limit_seconds: float = Field(
        300.0, ge=0,
        description="How long the vector store may stay unreachable for a background job before the job fails "
        "saying so",
    )
    max_json_body_bytes: int = Field(
        1024 * 1024, gt=0,
        description="The largest request body read, uploads aside (which have their own limits); past it, 413 "
        "PAYLOAD_TOO_LARGE. A question's body is at most ~25 KB (2,000 characters, each at most 12 bytes as a JSON "
        "escape); the default leaves room for an OpenAI client that resends a long conversation with each question",
    )
    # At least one largest request (10 files of 50 MB), so one person's largest upload is never refused as such.
    upload_budget_bytes: int = Field(
        512 * 1024 * 1024, gt=0,
        description="Uploaded bytes held at once by all requests; past it an upload gets 503 "
        "SERVER_BUSY with Retry-After",
    )
    default_chat_id: str = Field("default", description="The chat POST /chat/ uses when the body names none")
    model_name: str = Field("axiom", description="The model id the OpenAI-compatible API lists and accepts")
    frontend_dir: Path = Field(
        _REPOSITORY_FRONTEND,
        description="The web UI served at / (index.html, assets/); the repository's frontend/ by default, so "
        "`axiom serve` serves it from any working directory. Without it the API runs alone",
    )

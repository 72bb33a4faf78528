"""Background jobs on real stores: cancelled while waiting, while reading and while embedding, they keep nothing;
their ids answer after a restart."""

from __future__ import annotations

import threading
import time

import pytest

from backend.errors import Cancelled, UnreadableDocument
from backend.ingest.jobs import IngestJobs
from backend.ingest.reader import DocumentReader, ReaderLimits
from backend.ingest.service import IngestionService, load_here
from backend.stores.jobs import JobStore
from tests.api.support import wait_for

PAPER = "academic_2col_naacl06-shinyama.pdf"


class GatedLoader:
    """Reads in this process, but only once the gate opens (or the job is cancelled): a job held mid-read."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.reading = threading.Event()

    def __call__(self, filename, data, cancelled=None, on_page=None):
        self.reading.set()
        while not self.gate.wait(0.01):
            if cancelled is not None and cancelled.is_set():
                raise Cancelled
        return load_here(filename, data)


def ingestion_with(services, load) -> IngestionService:
    return IngestionService(
        chunker=services.ingestion._chunker, embedder=services.embedder, vectors=services.vectors,
        keywords=services.keywords, documents=services.documents, load=load,
    )


def assert_nothing_stored(services, chat_id: str) -> None:
    assert services.documents.list(chat_id) == [] and services.documents.incomplete() == []
    assert services.vectors.count(chat_id) == 0 and services.keywords.count(chat_id) == 0


@pytest.fixture
def jobs_store(services):
    return JobStore(services.database)


def test_a_queued_job_cancelled_never_runs(services, jobs_store):
    loader = GatedLoader()
    jobs = IngestJobs(ingestion_with(services, loader), jobs_store)
    first = jobs.submit("chat1", "first.txt", b"Axolotls regrow their limbs.")
    loader.reading.wait(30)
    queued = jobs.submit("chat1", "second.txt", b"Salamanders are amphibians.")
    ended = threading.Event()
    third = jobs.submit("chat1", "third.txt", b"Newts live in ponds.", on_end=ended.set)

    assert jobs.cancel("chat1", queued.job_id, wait_seconds=5).state == "cancelled"
    assert jobs.cancel("chat1", third.job_id, wait_seconds=5).state == "cancelled"
    loader.gate.set()
    wait_for(lambda: jobs.get("chat1", first.job_id).state == "ready", "the first job")
    assert ended.wait(30)  # a cancelled job still gives back what it held
    assert [d.filename for d in services.documents.list("chat1")] == ["first.txt"]
    assert jobs.get("chat1", queued.job_id).state == "cancelled"
    jobs.close()


def test_a_job_cancelled_while_reading_keeps_nothing(services, jobs_store):
    loader = GatedLoader()
    jobs = IngestJobs(ingestion_with(services, loader), jobs_store)
    job = jobs.submit("chat1", "notes.txt", b"Axolotls regrow their limbs.")
    loader.reading.wait(30)
    assert jobs.cancel("chat1", job.job_id, wait_seconds=30).state == "cancelled"
    assert jobs.unfinished("chat1") == []
    assert_nothing_stored(services, "chat1")
    jobs.close()


def test_a_job_cancelled_while_embedding_is_rolled_back(services, jobs_store, pdfs):
    embedding = threading.Event()
    proceed = threading.Event()
    real_embed = services.embedder.embed_documents

    class SlowEmbedder:
        def embed_documents(self, texts):
            embedding.set()
            proceed.wait(30)
            return real_embed(texts)

    ingestion = IngestionService(
        chunker=services.ingestion._chunker, embedder=SlowEmbedder(), vectors=services.vectors,
        keywords=services.keywords, documents=services.documents, load=load_here,
    )
    jobs = IngestJobs(ingestion, jobs_store)
    job = jobs.submit("chat1", PAPER, (pdfs / PAPER).read_bytes())
    assert embedding.wait(60)
    cancelling = threading.Thread(target=jobs.cancel, args=("chat1", job.job_id), kwargs={"wait_seconds": 60})
    cancelling.start()
    time.sleep(0.1)
    proceed.set()
    cancelling.join()
    assert jobs.get("chat1", job.job_id).state == "cancelled"
    assert_nothing_stored(services, "chat1")
    jobs.close()


def test_a_reading_cancelled_midway_kills_its_worker_and_the_next_file_is_read(pdfs):
    reader = DocumentReader(ReaderLimits(seconds=120))
    cancelled = threading.Event()
    threading.Timer(1.0, cancelled.set).start()  # the 400-page PDF takes several seconds to read
    with pytest.raises(Cancelled):
        reader.read("long.pdf", (pdfs / "long_us_irs_irm_2.3.59_400p.pdf").read_bytes(), cancelled)
    assert reader.read("notes.txt", b"Axolotls regrow their limbs.").pages[0].text == "Axolotls regrow their limbs."
    reader.close()


def test_a_file_that_takes_too_long_to_read_is_refused_and_its_worker_killed(pdfs):
    reader = DocumentReader(ReaderLimits(seconds=0.5))
    with pytest.raises(UnreadableDocument) as refused:
        reader.read("long.pdf", (pdfs / "long_us_irs_irm_2.3.59_400p.pdf").read_bytes())
    assert refused.value.reason == "too_complex" and "took longer than 0.5 s" in refused.value.message
    reader.close()


def test_job_ids_answer_after_a_restart(services, jobs_store):
    jobs = IngestJobs(services.ingestion, jobs_store)
    done = jobs.submit("chat1", "notes.txt", b"Axolotls regrow their limbs.")
    failed = jobs.submit("chat1", "empty.txt", b"   ")
    wait_for(lambda: jobs.unfinished("chat1") == [], "the jobs")
    jobs.close()
    # A job a restart interrupts: its row says indexing, and its bytes are gone.
    jobs_store.update(failed.job_id, "indexing")

    restarted = IngestJobs(services.ingestion, JobStore(services.database))
    ready = restarted.get("chat1", done.job_id)
    assert ready.state == "ready" and ready.document_id == done.job_id
    assert services.documents.get("chat1", done.job_id).filename == "notes.txt"
    interrupted = restarted.get("chat1", failed.job_id)
    assert interrupted.state == "failed" and "interrupted by a restart" in interrupted.error["message"]
    assert restarted.get("other-chat", done.job_id) is None
    restarted.close()

"""Background jobs on real stores: cancelled while waiting, while reading and while embedding (from this process or
another), they keep nothing; a job whose worker died is taken over, its half-stored document rolled back, and
retried until it has been interrupted too often; job ids answer after a restart."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from sqlalchemy import event, text

from backend.config import Settings
from backend.errors import Cancelled, TooLongForRequest, UnreadableDocument
from backend.ids import new_document_id
from backend.ingest.jobs import IngestJobs
from backend.ingest.reader import DocumentReader, Patience, ReaderLimits
from backend.ingest.recovery import RecoverySweep
from backend.ingest.service import IngestionService, load_here
from backend.stores.database import create_database_engine, database_url, migrate
from backend.stores.documents import new_record
from backend.stores.jobs import JobRecord, JobStore
from tests.support.postgres import PostgresServer, find_binaries
from tests.support.waiting import wait_for

PAPER = "academic_2col_naacl06-shinyama.pdf"


class GatedLoader:
    """Reads in this process, but only once the gate opens (or the job is cancelled): a job held mid-read."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.reading = threading.Event()

    def __call__(self, filename, data, cancelled=None, on_page=None, *, patience=None, password=None):
        self.reading.set()
        while not self.gate.wait(0.01):
            if cancelled is not None and cancelled.is_set():
                raise Cancelled
        return load_here(filename, data, password=password)


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
    third = jobs.submit("chat1", "third.txt", b"Newts live in ponds.")

    assert jobs.cancel("chat1", queued.job_id, wait_seconds=5).state == "cancelled"
    assert jobs.cancel("chat1", third.job_id, wait_seconds=5).state == "cancelled"
    loader.gate.set()
    wait_for(lambda: jobs.get("chat1", first.job_id).state == "ready", "the first job")
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


def test_a_read_that_would_keep_a_request_waiting_too_long_is_given_up(pdfs):
    """Queued behind a long read (the multi-page scan's OCR), a small file's read within a request gives up after
    its patience; the long one goes on."""
    reader = DocumentReader(ReaderLimits(seconds=120))
    scan = (pdfs / "scanned_multipage_mixed.pdf").read_bytes()
    stop_long_read = threading.Event()
    long_read = threading.Thread(target=lambda: pytest.raises(Cancelled, reader.read, "scan.pdf", scan, stop_long_read))
    long_read.start()
    time.sleep(0.5)  # let the long read take the only worker (an ordering aid, not a timing expectation)
    with pytest.raises(TooLongForRequest):
        reader.read("notes.txt", b"Axolotls regrow their limbs.", patience=Patience(0.5))
    stop_long_read.set()
    long_read.join()
    reader.close()


def test_job_ids_answer_after_a_restart(services, jobs_store):
    jobs = IngestJobs(services.ingestion, jobs_store)
    done = jobs.submit("chat1", "notes.txt", b"Axolotls regrow their limbs.")
    failed = jobs.submit("chat1", "empty.txt", b"   ")
    wait_for(lambda: jobs.unfinished("chat1") == [], "the jobs")
    jobs.close()

    restarted = IngestJobs(services.ingestion, JobStore(services.database))
    ready = restarted.get("chat1", done.job_id)
    assert ready.state == "ready" and ready.document_id == done.job_id and ready.progress == 1.0
    assert services.documents.get("chat1", done.job_id).filename == "notes.txt"
    assert restarted.get("chat1", failed.job_id).state == "failed"
    assert restarted.get("other-chat", done.job_id) is None
    restarted.close()


def accepted_and_abandoned(services, jobs_store, filename: str, data: bytes, *, deaths: int = 1) -> str:
    """A job some replica accepted, that ``deaths`` workers claimed and died holding (leases already run out),
    the last leaving its document half-stored: registered and in Chroma, never ready."""
    job_id = new_document_id()
    jobs_store.add(JobRecord(job_id, "chat1", filename, len(data), "queued", None, None, time.time()), filename, data)
    for death in range(deaths):
        assert jobs_store.claim(f"dead-worker-{death}", lease_seconds=0.0).record.job_id == job_id
    document = load_here(filename, data)
    _, chunks = services.ingestion._chunker.chunk(document, job_id)
    services.documents.begin(new_record(
        document_id=job_id, chat_id="chat1", filename=filename, sha256="half", file_type="txt",
        size_bytes=len(data), page_count=1,
    ))
    services.vectors.add("chat1", chunks, services.embedder.embed_documents([c.text for c in chunks]))
    return job_id


def test_a_job_whose_worker_died_is_rolled_back_and_finished_by_another(services, jobs_store):
    job_id = accepted_and_abandoned(services, jobs_store, "notes.txt", b"Axolotls regrow their limbs.")
    jobs = IngestJobs(services.ingestion, jobs_store)
    wait_for(lambda: jobs.get("chat1", job_id).finished, "the job taken over")
    assert jobs.get("chat1", job_id).state == "ready"
    assert jobs_store.get("chat1", job_id).attempts == 2
    record = services.documents.get("chat1", job_id)
    assert record.status == "ready" and record.sha256 != "half"  # indexed again, not the dead worker's half
    assert services.vectors.count("chat1") == services.keywords.count("chat1") == record.chunk_count
    jobs.close()


def test_a_job_interrupted_too_often_fails_saying_so_and_keeps_nothing(services, jobs_store):
    job_id = accepted_and_abandoned(services, jobs_store, "notes.txt", b"Axolotls regrow their limbs.", deaths=3)
    jobs = IngestJobs(services.ingestion, jobs_store, max_attempts=3)
    wait_for(lambda: jobs.get("chat1", job_id).finished, "the job taken over")
    job = jobs.get("chat1", job_id)
    assert job.state == "failed" and "interrupted" in job.error["message"] and "3 times" in job.error["message"]
    assert_nothing_stored(services, "chat1")
    jobs.close()


def test_a_document_stored_whole_before_its_worker_died_is_kept(services, jobs_store):
    data = b"Axolotls regrow their limbs."
    job_id = new_document_id()
    jobs_store.add(JobRecord(job_id, "chat1", "notes.txt", len(data), "queued", None, None, time.time()),
                   "notes.txt", data)
    jobs_store.claim("dead-worker", lease_seconds=0.0)
    services.ingestion.ingest("chat1", "notes.txt", data, document_id=job_id)  # then it died, job not updated
    jobs = IngestJobs(services.ingestion, jobs_store)
    wait_for(lambda: jobs.get("chat1", job_id).finished, "the job taken over")
    assert jobs.get("chat1", job_id).state == "ready" and jobs.get("chat1", job_id).document_id == job_id
    jobs.close()


def cut_once_writing_chunks(engine) -> threading.Event:
    """The server ends the connection that writes a document's chunks (``DocumentStore.mark_ready``), once, as its
    restart or a network cut does in the middle of a transaction; set to the event once it did."""
    cut = threading.Event()

    def cut_first(connection, cursor, statement, *_) -> None:
        if statement.startswith("INSERT INTO chunks") and not cut.is_set():
            cut.set()
            with engine.begin() as admin:
                admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": cursor.connection.info.backend_pid})

    event.listen(engine, "before_cursor_execute", cut_first)
    return cut


def test_a_job_whose_database_connection_is_cut_while_storing_is_tried_again_not_failed(
    make_services, tmp_path, new_database_url
):
    """PostgreSQL restarting while a job writes its document is an outage, as a worker's death is, not a fault of
    the file's: the job is tried again once its lease runs out and stored once, not failed "unexpectedly"."""
    services = make_services(tmp_path / "data", database_url=new_database_url("postgresql"))
    cut = cut_once_writing_chunks(services.database)
    jobs = IngestJobs(services.ingestion, JobStore(services.database), lease_seconds=1.0, poll_seconds=0.2)

    job = jobs.submit("chat1", "notes.txt", b"Axolotls regrow their limbs.")
    wait_for(lambda: jobs.get("chat1", job.job_id).finished, "the job")

    done = jobs.get("chat1", job.job_id)
    assert cut.is_set() and (done.state, done.error) == ("ready", None)
    assert services.jobs.get("chat1", job.job_id).attempts == 2
    (stored,) = services.documents.list("chat1")
    assert services.vectors.count("chat1") == services.keywords.count("chat1") == stored.chunk_count > 0
    jobs.close()
    services.database.dispose()


def test_workers_waiting_out_a_database_outage_log_a_line_per_try_not_a_traceback(
    services, postgres_server, caplog
):
    """Every replica's workers poll for jobs, and its sweep runs, every few seconds: while the database is away each
    try is one line naming the cause, not a stack trace each (thousands of lines in a minute's outage)."""
    server = PostgresServer.start(find_binaries())  # of its own: no other test's connection waits while it is down
    engine = create_database_engine(database_url(Settings(database_url=server.create_database())))
    try:
        migrate(engine)
        store = JobStore(engine)
        jobs = IngestJobs(services.ingestion, store, poll_seconds=0.05)
        sweep = RecoverySweep(services.ingestion, store, every_seconds=0.05)
        with caplog.at_level(logging.WARNING), server.down():
            wait_for(lambda: {r.name for r in outage_lines(caplog)} == {"backend.ingest.jobs", "backend.ingest.recovery"},
                     "a try of each", timeout=60)
        sweep.close()
        jobs.close()
    finally:
        engine.dispose()
        server.stop()
    assert all(r.exc_info is None and "database is unreachable" in r.message for r in outage_lines(caplog))


def outage_lines(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.message.startswith(("claiming", "the recovery"))]


def test_a_job_running_in_one_replica_is_cancelled_and_watched_from_another(services, jobs_store):
    loader = GatedLoader()
    running_here = IngestJobs(ingestion_with(services, loader), jobs_store, lease_seconds=0.6)
    job = running_here.submit("chat1", "notes.txt", b"Axolotls regrow their limbs.")
    assert loader.reading.wait(30)
    # Another replica on the same database (with no idle worker, which on SQLite, meant for one process, would
    # take over the running job). It sees the job running, and cancels it.
    elsewhere = IngestJobs(services.ingestion, JobStore(services.database), workers=0, lease_seconds=0.6)
    assert elsewhere.get("chat1", job.job_id).state == "indexing"
    assert [j.job_id for j in elsewhere.unfinished("chat1")] == [job.job_id]
    assert elsewhere.cancel("chat1", job.job_id, wait_seconds=30).state == "cancelled"
    assert running_here.get("chat1", job.job_id).state == "cancelled"
    assert_nothing_stored(services, "chat1")
    running_here.close()
    elsewhere.close()

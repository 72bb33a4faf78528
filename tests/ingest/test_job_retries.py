"""Background jobs while a real `chroma run` server is stopped: a job that meets it down waits queued and is
stored whole once it is back; one it stays away from too long fails saying so; one cancelled while it waits
keeps nothing, and neither does one that ends while it is still down, once it is back."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from backend.ingest.jobs import IngestJobs
from backend.ingest.recovery import RecoverySweep
from tests.support.chroma_server import ChromaServer
from tests.support.postgres import DATABASES
from tests.support.waiting import wait_for

NOTES = b"Axolotls regrow their limbs. They live in the lakes of Mexico City and never leave the water."


@pytest.fixture
def services(make_services, tmp_path: Path, chroma: ChromaServer):
    return make_services(
        tmp_path / "data", chroma_host=chroma.host, chroma_port=chroma.port, chroma_timeout_seconds=5
    )


def waiting_to_retry(jobs: IngestJobs, chat_id: str, job_id: str):
    return wait_for(
        lambda: (job := jobs.get(chat_id, job_id)).state == "queued" and job.retry_at is not None and job,
        "the job to wait for the vector store",
    )


def test_a_job_that_meets_chroma_down_waits_and_is_stored_whole_once_it_is_back(services, chroma):
    jobs = IngestJobs(services.ingestion, services.jobs, retry_seconds=0.5, retry_limit_seconds=600)
    with chroma.down():
        job = jobs.submit("retried", "notes.txt", NOTES)
        waiting = waiting_to_retry(jobs, "retried", job.job_id)
        assert waiting.error["error"] == "RETRIEVAL_FAILED" and "unreachable" in waiting.error["message"]
        assert [j.job_id for j in jobs.unfinished("retried")] == [job.job_id]
        assert services.documents.list("retried") == []
        waiting_to_retry(jobs, "retried", job.job_id)  # tried again, and waiting again: Chroma is still down
        assert services.jobs.get("retried", job.job_id).retrying_since is not None

    wait_for(lambda: jobs.get("retried", job.job_id).finished, "the job once Chroma is back")
    done = jobs.get("retried", job.job_id)
    assert (done.state, done.document_id, done.error, done.retry_at) == ("ready", job.job_id, None, None)
    (stored,) = services.documents.list("retried")
    assert stored.document_id == job.job_id and services.documents.incomplete() == []
    assert services.vectors.count("retried") == services.keywords.count("retried") == stored.chunk_count > 0
    jobs.close()


def test_a_job_chroma_stays_away_from_too_long_fails_saying_so(services, chroma):
    jobs = IngestJobs(services.ingestion, services.jobs, retry_seconds=0.2, retry_limit_seconds=1.5)
    with chroma.down():
        job = jobs.submit("given-up", "notes.txt", NOTES)
        failed = wait_for(lambda: (j := jobs.get("given-up", job.job_id)).finished and j, "the job to fail")
    assert failed.state == "failed" and failed.error["error"] == "RETRIEVAL_FAILED"
    assert "was unreachable for" in failed.error["message"] and "Upload the file again" in failed.error["message"]
    assert failed.error["details"]["unreachable_seconds"] >= 1
    assert services.documents.list("given-up") == []
    jobs.close()


def test_a_job_cancelled_while_it_waits_for_chroma_keeps_nothing(services, chroma):
    jobs = IngestJobs(services.ingestion, services.jobs, retry_seconds=600, retry_limit_seconds=600)
    with chroma.down():
        job = jobs.submit("cancelled", "notes.txt", NOTES)
        waiting_to_retry(jobs, "cancelled", job.job_id)
        assert services.documents.incomplete() != []  # its try's registry row: Chroma was away to roll it back
    assert jobs.cancel("cancelled", job.job_id, wait_seconds=5).state == "cancelled"
    assert jobs.unfinished("cancelled") == []
    assert services.documents.list("cancelled") == [] and services.documents.incomplete() == []
    assert services.vectors.count("cancelled") == 0
    jobs.close()


@pytest.fixture(params=DATABASES)
def services_on_each_database(request, make_services, tmp_path: Path, chroma: ChromaServer, new_database_url):
    services = make_services(
        tmp_path / "data", chroma_host=chroma.host, chroma_port=chroma.port, chroma_timeout_seconds=5,
        database_url=new_database_url(request.param),
    )
    yield services
    services.database.dispose()


@pytest.mark.parametrize("ending", ["cancelled", "failed"])
def test_a_job_that_ends_while_chroma_is_down_is_discarded_and_its_vectors_removed_once_it_is_back(
    services_on_each_database, chroma, monkeypatch, ending
):
    """Cancelled while it waits, or failed for waiting too long: its half-stored document is at once no longer
    one being stored, and once Chroma is back its vectors go, the chat's other file's stay."""
    services = services_on_each_database
    chat = uuid.uuid4().hex  # the server, and so the chat's collection, outlives each case
    kept = services.ingestion.ingest(chat, "kept.txt", b"Tides follow the moon. Spring tides are the highest.")
    stopped = chroma.going_down_once_stored(services.vectors, monkeypatch)
    limit = 600 if ending == "cancelled" else 1.5
    jobs = IngestJobs(services.ingestion, services.jobs, retry_seconds=0.2, retry_limit_seconds=limit)
    job = jobs.submit(chat, "notes.txt", NOTES)
    assert stopped.wait(120)
    with chroma.down():  # already stopped: started again with its data at the end of the block
        if ending == "cancelled":
            waiting_to_retry(jobs, chat, job.job_id)
            jobs.cancel(chat, job.job_id, wait_seconds=5)
        ended = wait_for(lambda: (j := jobs.get(chat, job.job_id)).finished and j, "the job to end")
        assert ended.state == ending
        wait_for(services.documents.discarded, "its document to be discarded")  # as its worker ends it
        assert services.documents.incomplete() == []  # not taken for a document some process is storing
        assert [d.document_id for d in services.documents.discarded()] == [job.job_id]
        assert services.documents.list(chat) == [services.documents.get(chat, kept.document_id)]

    sweep = RecoverySweep(services.ingestion, services.jobs, every_seconds=0.2)
    try:
        wait_for(lambda: services.documents.discarded() == [], "the sweep to remove the discarded document")
    finally:
        sweep.close()
    assert services.vectors.document_ids(chat) == {kept.document_id}
    assert services.vectors.count(chat) == services.keywords.count(chat) == kept.chunk_count
    jobs.close()

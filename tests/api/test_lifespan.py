"""The app's start-up (its lifespan) when a part of it fails: nothing it started is left running."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import threading

import pytest

from backend.api.app import create_app


class ReaderThatCannotStart:
    """Stand-in for a DocumentReader whose worker process cannot be started (a machine out of processes), which
    no test can bring about for real."""

    def warm_up(self) -> None:
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    def close(self) -> None:
        pass


def test_a_start_up_that_fails_leaves_no_job_worker_or_sweep_running(services):
    # `axiom serve` builds the services before the server starts and closes them once it has ended: a thread the
    # lifespan started and never stopped would go on claiming jobs and sweeping over closed services.
    before = set(threading.enumerate())
    app = create_app(services.settings, services=dataclasses.replace(services, reader=ReaderThatCannotStart()))

    async def start() -> None:
        async with app.router.lifespan_context(app):
            pass

    with pytest.raises(OSError):
        asyncio.run(start())
    started = {thread.name for thread in set(threading.enumerate()) - before if thread.is_alive()}
    assert not {name for name in started if name.startswith(("axiom-ingest", "axiom-recovery"))}
    services.database.dispose()

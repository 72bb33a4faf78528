"""The container's start-up checks of how the settings fit together."""

from __future__ import annotations

import logging

import pytest

from tests.support.postgres import DATABASES

NOT_SHARED = "other replicas on this database will not see them"


@pytest.mark.parametrize("engine", DATABASES)
def test_a_shared_database_with_an_embedded_chroma_warns_that_replicas_would_not_share_vectors(
    engine, make_services, new_database_url, tmp_path, caplog
):
    """Replicas set up with AXIOM_DATABASE_URL alone: each would search only the vectors of its own uploads."""
    with caplog.at_level(logging.WARNING, logger="backend.container"):
        services = make_services(tmp_path / "data", database_url=new_database_url(engine))
    services.database.dispose()
    warned = [record.getMessage() for record in caplog.records if NOT_SHARED in record.getMessage()]
    if engine == "sqlite":  # one process: nothing to share
        assert warned == []
    else:
        assert len(warned) == 1 and "AXIOM_CHROMA_HOST" in warned[0] and str(tmp_path / "data") in warned[0]

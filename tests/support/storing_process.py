"""Another process storing a document, as a replica does within an upload request between the document's
'indexing' row and its 'ready' one (``IngestionService._store``), until the test kills it: what a replica that
dies mid-upload leaves in a shared database."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from backend.stores.documents import DocumentRecord, DocumentStore

REPO = Path(__file__).resolve().parents[2]


@contextmanager
def process_storing(database_url: str, chat_id: str, document_id: str) -> Iterator[subprocess.Popen]:
    """Yields once the process has begun the document; the process is killed (SIGKILL) at the latest on exit."""
    script = textwrap.dedent(f"""
        import time
        from backend.stores.database import create_database_engine
        from backend.stores.documents import DocumentStore, new_record
        store = DocumentStore(create_database_engine({database_url!r}))
        with store.storing([{document_id!r}]):
            store.begin(new_record(
                document_id={document_id!r}, chat_id={chat_id!r}, filename="upload.txt", sha256={document_id!r},
                file_type="txt", size_bytes=1, page_count=1,
            ))
            print("storing", flush=True)
            time.sleep(600)
    """)
    process = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert process.stdout.readline().strip() == "storing", "the storing process did not begin"
        yield process
    finally:
        process.kill()
        process.wait()
        process.stdout.close()


def left_behind_now(store: DocumentStore, document: DocumentRecord) -> bool:
    with store.left_behind(document) as left:
        return left

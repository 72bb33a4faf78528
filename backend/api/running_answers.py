"""The answers being written, by chat, on this replica: what deleting a chat stops (``Chats.delete``), as Stop
does. None of them could be saved any more (the deletion refuses them, MemoryStore.add_exchange), so the model is
not kept from other chats' questions writing them. (Another replica's are refused when saved.)"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(eq=False, slots=True)  # each run is its own: compared, and hashed, by identity
class Run:
    """An answer being written, as ``stop_chat`` reaches it."""

    cancel: threading.Event
    chat_deleted: bool = False


class RunningAnswers:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, set[Run]] = {}  # by chat, under _lock

    @contextmanager
    def running(self, chat_id: str, cancel: threading.Event) -> Iterator[Run]:
        """Registers an answer being written in the chat while the block runs; ``cancel`` stops it."""
        run = Run(cancel)
        with self._lock:
            self._runs.setdefault(chat_id, set()).add(run)
        try:
            yield run
        finally:
            with self._lock:
                self._runs[chat_id].discard(run)
                if not self._runs[chat_id]:
                    del self._runs[chat_id]

    def stop_chat(self, chat_id: str) -> None:
        """Stops the answers being written in a chat just deleted; their streams end with CHAT_DELETED, as if
        refused when saved."""
        with self._lock:
            runs = list(self._runs.get(chat_id, ()))
        for run in runs:
            run.chat_deleted = True
            run.cancel.set()

"""Who uses the language model next: one queue in front of a provider, fair between chats.

A provider runs a fixed number of generations at once (its slots). Every call on the model waits here for a slot.
Slots go to chats in turn (round robin) and, within a chat, first come first served, so one chat asking ten things
cannot starve another. A waiting call is told how many calls are ahead of it whenever that changes, leaves at once
when its asker stops, and gives up when its wait has exceeded, or by the recent pace would exceed, the patience it
was given: the caller then answers without the model (the evidence answer) instead of failing. How long a turn
takes is learnt from the turns that finished, so the estimate follows the machine's real speed, busy or not.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

# How often a waiting call looks at its asker's Stop and its own patience; also the longest a Stop waits to be seen.
POLL_SECONDS = 0.1
# Weight of the newest finished turn in the running estimate of how long a turn takes.
_PACE_WEIGHT = 0.3


class ModelBusy(Exception):
    """The call waited, or by the recent pace would wait, longer than its patience; it holds no slot."""

    def __init__(self, ahead: int, expected_wait: float | None) -> None:
        super().__init__(f"{ahead} calls ahead; expected wait {expected_wait}")
        self.ahead = ahead
        self.expected_wait = expected_wait


class TurnCancelled(Exception):
    """The asker stopped while the call was waiting; it left the queue."""


def _never() -> bool:
    return False


@dataclass(frozen=True)
class Waiter:
    """Who is asking, and how they want to wait."""

    chat_id: str = ""
    # Called with the number of calls ahead, first on joining and then whenever it changes.
    on_position: Callable[[int], None] | None = None
    # Called when the call's turn has come, before the model starts on it.
    on_turn: Callable[[], None] | None = None
    # Polled while waiting (and by the provider while generating): True ends the call.
    cancelled: Callable[[], bool] = _never
    # Seconds this call may wait for a slot; None waits as long as it takes.
    patience: float | None = None


@dataclass(eq=False)
class _Place:
    waiter: Waiter
    joined: float
    granted: bool = False


@dataclass
class _Queue:
    """Per-chat FIFOs, in the order chats get their next turn."""

    chats: OrderedDict[str, deque[_Place]] = field(default_factory=OrderedDict)

    def __len__(self) -> int:
        return sum(len(places) for places in self.chats.values())

    def push(self, place: _Place) -> None:
        self.chats.setdefault(place.waiter.chat_id, deque()).append(place)

    def pop_next(self) -> _Place | None:
        """The head of the chat whose turn it is; that chat then goes to the back of the round."""
        if not self.chats:
            return None
        chat_id, places = next(iter(self.chats.items()))
        place = places.popleft()
        del self.chats[chat_id]
        if places:
            self.chats[chat_id] = places
        return place

    def remove(self, place: _Place) -> None:
        places = self.chats.get(place.waiter.chat_id)
        if places is not None and place in places:
            places.remove(place)
            if not places:
                del self.chats[place.waiter.chat_id]

    def ahead_of(self, place: _Place) -> int:
        """How many places will be served before this one if nobody else joins: round r serves the r-th place of
        every chat, in the chats' order."""
        own = self.chats[place.waiter.chat_id]
        index = own.index(place)
        ahead = index
        before_own = True
        for chat_id, places in self.chats.items():
            if chat_id == place.waiter.chat_id:
                before_own = False
                continue
            ahead += min(len(places), index + 1 if before_own else index)
        return ahead


class LLMScheduler:
    def __init__(self, slots: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if slots < 1:
            raise ValueError("a scheduler needs at least one slot")
        self.slots = slots
        self._clock = clock
        self._changed = threading.Condition()
        self._queue = _Queue()
        # When each running turn was granted: how far along the running turns are is part of a newcomer's wait.
        self._running: dict[_Place, float] = {}
        self._turn_seconds: float | None = None

    @contextmanager
    def turn(self, waiter: Waiter) -> Iterator[None]:
        """Holds one of the provider's slots for the body; raises ModelBusy or TurnCancelled instead of waiting
        longer than allowed."""
        place = self._wait_for_slot(waiter)
        try:
            yield
        finally:
            self._release(place)

    @property
    def waiting(self) -> int:
        with self._changed:
            return len(self._queue)

    def expected_wait(self, ahead: int | None = None) -> float | None:
        """Seconds until a call with ``ahead`` calls before it (default: a newcomer) starts, at the recent pace;
        None before any turn has finished."""
        with self._changed:
            return self._estimate(len(self._queue) if ahead is None else ahead)

    def _estimate(self, ahead: int) -> float | None:
        """Under the lock: the slots free up as their running turns end (each expected to last a turn, less what
        it has run), then every further ``slots`` calls take one more turn."""
        if self._turn_seconds is None:
            return None
        now = self._clock()
        freeing = sorted(max(0.0, self._turn_seconds - (now - granted)) for granted in self._running.values())
        freeing = [0.0] * (self.slots - len(freeing)) + freeing  # free slots are free now
        return (ahead // self.slots) * self._turn_seconds + freeing[ahead % self.slots]

    def _wait_for_slot(self, waiter: Waiter) -> _Place:
        if waiter.cancelled():  # stopped before it asked: never start the model on it
            raise TurnCancelled()
        place = _Place(waiter, self._clock())
        with self._changed:
            self._queue.push(place)
            self._dispatch()
        reported: int | None = None
        try:
            while True:
                with self._changed:
                    if place.granted:
                        return place
                    if waiter.cancelled():
                        raise TurnCancelled()
                    ahead = self._queue.ahead_of(place)
                    self._check_patience(place, ahead)
                    if ahead == reported:
                        self._changed.wait(POLL_SECONDS)
                        continue
                # Outside the lock: the callback sends an event to the asker and may take its time or raise.
                if waiter.on_position is not None:
                    waiter.on_position(ahead)
                reported = ahead
        except BaseException:
            self._leave(place)
            raise

    def _check_patience(self, place: _Place, ahead: int) -> None:
        patience = place.waiter.patience
        if patience is None:
            return
        waited = self._clock() - place.joined
        expected = self._estimate(ahead)
        if waited >= patience or (expected is not None and waited + expected > patience):
            raise ModelBusy(ahead, expected)

    def _leave(self, place: _Place) -> None:
        """Takes a place that gave up out of the queue, or hands back the slot it was granted meanwhile."""
        with self._changed:
            if place.granted:
                del self._running[place]
            else:
                self._queue.remove(place)
            self._dispatch()

    def _release(self, place: _Place) -> None:
        with self._changed:
            seconds = self._clock() - self._running.pop(place)
            self._turn_seconds = seconds if self._turn_seconds is None else (
                _PACE_WEIGHT * seconds + (1 - _PACE_WEIGHT) * self._turn_seconds
            )
            self._dispatch()

    def _dispatch(self) -> None:
        """Under the lock: gives free slots to the next places in round-robin order and wakes every waiter (those
        still waiting have moved up)."""
        while len(self._running) < self.slots:
            place = self._queue.pop_next()
            if place is None:
                break
            place.granted = True
            self._running[place] = self._clock()
        self._changed.notify_all()

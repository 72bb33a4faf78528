"""The model's queue: slots, fairness between chats, positions, Stop, patience. Pure Python: real threads, no model."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from backend.llm.scheduler import LLMScheduler, ModelBusy, TurnCancelled, Waiter

# Long enough for any thread on a busy machine to reach its next step; only a failing test ever waits this long.
SETTLE_SECONDS = 30


class Holder:
    """A call that takes a turn on a thread of its own and keeps it until released."""

    def __init__(self, scheduler: LLMScheduler, waiter: Waiter, served: list[str] | None = None, name: str = "") -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.error: BaseException | None = None
        self._served = served
        self._name = name
        self.thread = threading.Thread(target=self._run, args=(scheduler, waiter), daemon=True)
        self.thread.start()

    def _run(self, scheduler: LLMScheduler, waiter: Waiter) -> None:
        try:
            with scheduler.turn(waiter):
                if self._served is not None:
                    self._served.append(self._name)
                self.started.set()
                assert self.release.wait(SETTLE_SECONDS)
        except BaseException as error:  # noqa: BLE001 - inspected by the test
            self.error = error
            self.started.set()

    def finish(self) -> None:
        self.release.set()
        self.thread.join(SETTLE_SECONDS)


def wait_until(condition: Callable[[], bool]) -> None:
    done = threading.Event()
    for _ in range(SETTLE_SECONDS * 100):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError("condition not reached")


def test_one_slot_runs_one_call_and_the_next_gets_it_when_it_ends() -> None:
    scheduler = LLMScheduler(slots=1)
    first = Holder(scheduler, Waiter(chat_id="a"))
    assert first.started.wait(SETTLE_SECONDS)
    second = Holder(scheduler, Waiter(chat_id="b"))
    wait_until(lambda: scheduler.waiting == 1)

    assert not second.started.is_set()
    first.finish()
    assert second.started.wait(SETTLE_SECONDS)
    assert scheduler.waiting == 0
    second.finish()
    assert first.error is None and second.error is None


def test_two_slots_run_two_calls_at_once() -> None:
    scheduler = LLMScheduler(slots=2)
    calls = [Holder(scheduler, Waiter(chat_id=name)) for name in "ab"]

    assert all(call.started.wait(SETTLE_SECONDS) for call in calls)
    for call in calls:
        call.finish()


def test_chats_take_turns_so_one_chat_asking_many_cannot_starve_another() -> None:
    scheduler = LLMScheduler(slots=1)
    served: list[str] = []
    running = Holder(scheduler, Waiter(chat_id="busy"), served, "busy-0")
    assert running.started.wait(SETTLE_SECONDS)
    queued = []
    for index in range(1, 4):
        queued.append(Holder(scheduler, Waiter(chat_id="busy"), served, f"busy-{index}"))
        wait_until(lambda n=index: scheduler.waiting == n)
    queued.append(Holder(scheduler, Waiter(chat_id="other"), served, "other"))
    wait_until(lambda: scheduler.waiting == 4)

    running.finish()
    for _ in queued:
        wait_until(lambda: any(h.started.is_set() and not h.release.is_set() for h in queued))
        next(h for h in queued if h.started.is_set() and not h.release.is_set()).finish()

    # The newcomer goes second, not after every question the busy chat queued before it.
    assert served == ["busy-0", "busy-1", "other", "busy-2", "busy-3"]


def test_a_waiting_call_is_told_its_position_as_it_moves_up() -> None:
    scheduler = LLMScheduler(slots=1)
    ahead = [Holder(scheduler, Waiter(chat_id="chat-0"))]
    assert ahead[0].started.wait(SETTLE_SECONDS)
    for n in (1, 2):
        ahead.append(Holder(scheduler, Waiter(chat_id=f"chat-{n}")))
        wait_until(lambda n=n: scheduler.waiting == n)
    positions: list[int] = []
    last = Holder(scheduler, Waiter(chat_id="last", on_position=positions.append))
    wait_until(lambda: positions == [2])

    for index, holder in enumerate(ahead):
        assert holder.started.wait(SETTLE_SECONDS)
        wait_until(lambda index=index: positions[-1] == 2 - index)
        holder.finish()
    assert last.started.wait(SETTLE_SECONDS)
    last.finish()

    assert positions == [2, 1, 0]


def test_stop_while_waiting_leaves_the_queue_at_once_and_frees_the_place() -> None:
    scheduler = LLMScheduler(slots=1)
    running = Holder(scheduler, Waiter(chat_id="a"))
    assert running.started.wait(SETTLE_SECONDS)
    stop = threading.Event()
    stopped = Holder(scheduler, Waiter(chat_id="b", cancelled=stop.is_set))
    positions: list[int] = []
    behind = Holder(scheduler, Waiter(chat_id="c", on_position=positions.append))
    wait_until(lambda: positions == [1])

    stop.set()
    stopped.thread.join(SETTLE_SECONDS)

    assert isinstance(stopped.error, TurnCancelled)
    wait_until(lambda: positions == [1, 0])
    assert scheduler.waiting == 1
    running.finish()
    assert behind.started.wait(SETTLE_SECONDS)
    behind.finish()


def test_a_call_out_of_patience_gives_up_without_holding_a_slot() -> None:
    scheduler = LLMScheduler(slots=1)
    running = Holder(scheduler, Waiter(chat_id="a"))
    assert running.started.wait(SETTLE_SECONDS)

    with pytest.raises(ModelBusy), scheduler.turn(Waiter(chat_id="b", patience=0.05)):
        pass

    assert scheduler.waiting == 0
    running.finish()
    with scheduler.turn(Waiter(chat_id="b", patience=0.0)):
        pass  # the slot is free again: no patience needed


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_call_that_would_wait_longer_than_its_patience_at_the_recent_pace_gives_up_at_once() -> None:
    clock = FakeClock()
    scheduler = LLMScheduler(slots=1, clock=clock)
    with scheduler.turn(Waiter()):
        clock.now += 40.0  # the model took 40 s for one turn
    running = Holder(scheduler, Waiter(chat_id="a"))
    assert running.started.wait(SETTLE_SECONDS)

    # One turn ahead (the running one) fits 60 s of patience; two do not.
    waiting = Holder(scheduler, Waiter(chat_id="b", patience=60.0))
    wait_until(lambda: scheduler.waiting == 1)
    with pytest.raises(ModelBusy) as raised, scheduler.turn(Waiter(chat_id="c", patience=60.0)):
        pass

    assert raised.value.ahead == 1
    assert raised.value.expected_wait == 80.0
    assert scheduler.expected_wait() == 80.0
    running.finish()
    assert waiting.started.wait(SETTLE_SECONDS)
    waiting.finish()
    assert waiting.error is None


def test_the_wait_counts_how_far_the_running_turn_has_got() -> None:
    clock = FakeClock()
    scheduler = LLMScheduler(slots=1, clock=clock)
    with scheduler.turn(Waiter()):
        clock.now += 10.0  # a turn takes 10 s
    running = Holder(scheduler, Waiter(chat_id="a"))
    assert running.started.wait(SETTLE_SECONDS)
    clock.now += 6.0  # the running turn is 6 s in: about 4 s left

    # First in line with 15 s of patience: 4 s to go fits, where counting a whole turn (10 s) after the 6 s already
    # waited would not.
    waiting = Holder(scheduler, Waiter(chat_id="b", patience=15.0))
    wait_until(lambda: scheduler.waiting == 1)
    assert scheduler.expected_wait(ahead=0) == 4.0
    clock.now += 5.0  # the turn overruns a little; still within patience
    running.finish()
    assert waiting.started.wait(SETTLE_SECONDS)
    waiting.finish()
    assert waiting.error is None


def test_a_call_stopped_before_it_asks_never_gets_a_turn() -> None:
    scheduler = LLMScheduler(slots=1)
    with pytest.raises(TurnCancelled), scheduler.turn(Waiter(cancelled=lambda: True)):
        pass
    assert scheduler.waiting == 0
    with scheduler.turn(Waiter()):
        pass  # the slot was never taken


def test_a_failing_position_callback_takes_the_call_out_of_the_queue() -> None:
    scheduler = LLMScheduler(slots=1)
    running = Holder(scheduler, Waiter(chat_id="a"))
    assert running.started.wait(SETTLE_SECONDS)

    def hung_up(_: int) -> None:
        raise ConnectionError("the asker went away")

    with pytest.raises(ConnectionError), scheduler.turn(Waiter(chat_id="b", on_position=hung_up)):
        pass

    assert scheduler.waiting == 0
    running.finish()

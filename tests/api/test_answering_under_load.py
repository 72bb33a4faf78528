"""Many people asking at once, over real HTTP: nobody gets an error for being second in line.

The concurrency test uses the real bundled model with short answers; the tests that need the model to stay busy
for as long as they look at the queue hold its slots themselves (the server runs in this process), or use a
scripted model that writes slowly.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from httpx_sse import connect_sse

from backend.api.settings import ApiSettings
from backend.rag.answer_text import loop_start
from tests.api.server import serve
from tests.api.support import assert_error, stream_events, upload
from tests.rag.scripted import ScriptedLLM
from tests.support.model_queue import model_busy
from tests.support.waiting import wait_for

NOTES = (
    "axolotl.txt",
    (
        b"Axolotls can regrow their limbs, their hearts and even parts of their brains. Water temperature for "
        b"axolotls should stay between 16 and 18 degrees Celsius. Axolotls eat earthworms, bloodworms and pellets."
    ),
)
QUESTIONS = [
    "What can axolotls regrow?",
    "What water temperature do axolotls need?",
    "What do axolotls eat?",
]
PEOPLE = 10
# Each person asks in a chat of their own. (Within one chat, a later question can be overtaken by another chat's
# first one — that is the fairness between chats, tested in tests/llm/test_scheduler.py — so its place may grow.)
CHATS = tuple(f"person-{n}" for n in range(PEOPLE))


@pytest.fixture(scope="module")
def server(build_app_services, tmp_path_factory):
    with serve(build_app_services(tmp_path_factory.mktemp("load"))) as running:
        with httpx.Client(base_url=running.url, timeout=300) as client:
            for chat in CHATS:
                assert upload(client, chat, NOTES).status_code == 200
        yield running


def ask(url: str, chat: str, question: str, session: str) -> list[tuple[str, dict]]:
    with httpx.Client(base_url=url, timeout=900) as client:
        return stream_events(client, f"/chat/{chat}/stream", {"message": question, "session_id": session})


@pytest.mark.slow
def test_ten_people_asking_at_once_all_get_an_answer_and_see_their_place(server):
    with ThreadPoolExecutor(PEOPLE) as pool:
        streams = list(pool.map(
            lambda n: ask(server.url, CHATS[n], QUESTIONS[n % len(QUESTIONS)], f"session-{n}"),
            range(PEOPLE),
        ))

    for events in streams:
        names = [name for name, _ in events]
        assert names[-1] == "done" and "error" not in names, events[-3:]
        # Evidence first: what the documents say comes before anything the model writes.
        assert names.index("sources") < names.index("evidence") < names.index("done")
        if "token" in names:
            assert names.index("evidence") < names.index("token")
        positions = [data["position"] for name, data in events if name == "status" and data["stage"] == "queued"]
        assert positions == sorted(positions, reverse=True), positions  # only ever moving up
        done = events[-1][1]
        assert done["answer_kind"] in {"generated", "extractive"} and done["answer"] and done["sources"]
    # With two slots and ten questions, someone had to wait and was told so.
    assert any(data["stage"] == "queued" for events in streams for name, data in events if name == "status")


def test_a_question_waiting_too_long_gets_the_evidence_answer_not_an_error(build_app_services, tmp_path):
    services = build_app_services(tmp_path / "data", llm_queue_patience_seconds=0)
    with serve(services) as running, httpx.Client(base_url=running.url, timeout=300) as client:
        assert upload(client, "pond", NOTES).status_code == 200
        with model_busy(running.services.llm.scheduler):
            events = stream_events(client, "/chat/pond/stream", {"message": QUESTIONS[0], "session_id": "s"})
            answer = client.post("/chat/", json={"message": QUESTIONS[1], "chat_id": "pond"})

    done = events[-1][1]
    assert events[-1][0] == "done"
    assert done["answer_kind"] == "extractive" and done["evidence_reason"] == "busy"
    assert "regrow their limbs" in done["answer"] and done["sources"][0]["filename"] == "axolotl.txt"
    assert answer.status_code == 200 and answer.json()["evidence_reason"] == "busy"


def test_stop_while_waiting_frees_the_place_and_saves_nothing(server):
    scheduler = server.services.llm.scheduler
    with model_busy(scheduler), httpx.Client(base_url=server.url, timeout=300) as client:
        body = {"message": QUESTIONS[0], "session_id": "stopped-in-line"}
        with connect_sse(client, "POST", "/chat/person-0/stream", json=body) as source:
            for sse in source.iter_sse():
                if sse.event == "status" and json.loads(sse.data)["stage"] == "queued":
                    break  # the person presses Stop while waiting: the connection closes
        wait_for(lambda: scheduler.waiting == 0, "the stopped question to leave the queue")
        assert client.get("/chat/history/stopped-in-line").status_code == 404


# An answer of 1,200 words that never repeats itself, which would take a minute to write: only a disconnect stops it
# early (a repeated sentence would be cut by the loop check, answer_text.loop_start, and end it by itself).
LONG_ANSWER = " ".join(f"Axolotl {n} regrows limb {n + 1} within {n + 2} weeks [Source 1]." for n in range(150))


def test_a_disconnect_mid_answer_stops_it_saves_nothing_and_frees_the_model(build_app_services, tmp_path):
    assert loop_start(LONG_ANSWER) is None
    slow = ScriptedLLM(LONG_ANSWER, "Axolotls regrow limbs [Source 1].", seconds_per_word=0.05)
    services = build_app_services(tmp_path / "data", llm=slow)
    with serve(services) as running, httpx.Client(base_url=running.url, timeout=300) as client:
        assert upload(client, "pond", NOTES).status_code == 200
        body = {"message": QUESTIONS[0], "session_id": "abandoned"}
        with connect_sse(client, "POST", "/chat/pond/stream", json=body) as source:
            for sse in source.iter_sse():
                if sse.event == "token":
                    break
        wait_for(lambda: slow.closed_streams == 1, "the abandoned generation to stop")
        assert slow.words_streamed < len(LONG_ANSWER.split()) / 2  # stopped, not run to its end
        assert client.get("/chat/history/abandoned").status_code == 404  # neither question nor part answer kept

        after = stream_events(client, "/chat/pond/stream", {"message": QUESTIONS[0], "session_id": "after"})
    assert after[-1][0] == "done" and after[-1][1]["answer"].startswith("Axolotls regrow limbs")


def test_a_truly_full_server_says_when_to_come_back(build_app_services, tmp_path):
    api_settings = ApiSettings(max_questions_in_flight=1)
    with serve(build_app_services(tmp_path / "data"), api_settings) as running:
        scheduler = running.services.llm.scheduler
        with httpx.Client(base_url=running.url, timeout=300) as client, ThreadPoolExecutor(1) as pool:
            assert upload(client, "pond", NOTES).status_code == 200
            with model_busy(scheduler):
                first = pool.submit(ask, running.url, "pond", QUESTIONS[0], "first")
                wait_for(lambda: scheduler.waiting == 1, "the first question to wait for the model")
                refused = client.post("/chat/pond/stream", json={"message": QUESTIONS[1]})
                refused_json = client.post("/chat/", json={"message": QUESTIONS[1], "chat_id": "pond"})
            assert first.result()[-1][0] == "done"  # the one being answered was not disturbed

    body = assert_error(refused, 503, "SERVER_BUSY")
    assert int(refused.headers["retry-after"]) == body["details"]["retry_after_seconds"] >= 1
    assert_error(refused_json, 503, "SERVER_BUSY")

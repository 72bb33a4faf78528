"""Two chats with different documents (ADR-007): neither ever sees the other's content, in sources, in answers,
or in what reaches the model."""

from __future__ import annotations

import httpx
import pytest

from tests.api.server import serve
from tests.api.support import upload, upload_paths

ZORBLAX = ("zorblax.txt", b"The Zorblax protocol was designed by Quentin Marlowe in 1987 to balance tidal energy grids.")
VELLICHOR = ("vellichor.txt", b"The Vellichor bridge spans the river Quorra; Ada Finchley built it in 1931 from granite.")
PAPER = "academic_2col_naacl06-shinyama.pdf"


class RecordingLLM:
    """The real model, with every prompt it is given kept for inspection."""

    def __init__(self, llm) -> None:
        self._llm = llm
        self.name = llm.name
        self.context_window = llm.context_window
        self.prompts: list[str] = []

    def count_tokens(self, text: str) -> int:
        return self._llm.count_tokens(text)

    def stream(self, messages, params, cancelled=None):
        self.prompts.append("\n".join(m["content"] for m in messages))
        return self._llm.stream(messages, params, cancelled)

    def complete(self, messages, params, cancelled=None):
        self.prompts.append("\n".join(m["content"] for m in messages))
        return self._llm.complete(messages, params, cancelled)


@pytest.fixture(scope="module")
def llm(api_llm) -> RecordingLLM:
    return RecordingLLM(api_llm)


@pytest.fixture(scope="module")
def client(build_app_services, tmp_path_factory, llm, pdfs):
    services = build_app_services(tmp_path_factory.mktemp("isolation"), llm=llm)
    with serve(services) as running, httpx.Client(base_url=running.url, timeout=600) as client:
        assert upload(client, "alpha", ZORBLAX).status_code == 200
        assert upload_paths(client, "alpha", pdfs / PAPER).status_code == 200
        assert upload(client, "beta", VELLICHOR).status_code == 200
        yield client


def ask(client: httpx.Client, chat_id: str, question: str) -> dict:
    response = client.post("/chat/", json={"message": question, "chat_id": chat_id})
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize(
    ("chat_id", "own", "foreign_marker", "question"),
    [("alpha", {ZORBLAX[0], PAPER}, "Finchley", "Who built the Vellichor bridge?"),
     ("beta", {VELLICHOR[0]}, "Marlowe", "Who designed the Zorblax protocol?"),
     ("beta", {VELLICHOR[0]}, "preemptive", "What is preemptive information extraction?")],
)
def test_a_chat_never_sees_the_other_chats_documents(client, llm, chat_id, own, foreign_marker, question):
    asked_before = len(llm.prompts)
    answer = ask(client, chat_id, question)
    assert {source["filename"] for source in answer["sources"]} <= own
    assert foreign_marker.lower() not in answer["answer"].lower()
    assert all(foreign_marker.lower() not in prompt.lower() for prompt in llm.prompts[asked_before:])


@pytest.mark.parametrize(
    ("chat_id", "filename", "marker", "question"),
    [("alpha", ZORBLAX[0], "Marlowe", "Who designed the Zorblax protocol?"),
     ("beta", VELLICHOR[0], "Finchley", "Who built the Vellichor bridge?")],
)
def test_a_chat_finds_its_own_documents(client, llm, chat_id, filename, marker, question):
    """The control for the test above: the same kind of question does reach a chat's own content."""
    asked_before = len(llm.prompts)
    answer = ask(client, chat_id, question)
    assert filename in {source["filename"] for source in answer["sources"]}
    assert any(marker in prompt for prompt in llm.prompts[asked_before:])


def test_each_chat_lists_only_its_documents(client):
    listed = {chat: {d["name"] for d in client.get(f"/chat/{chat}/documents").json()["documents"]}
              for chat in ("alpha", "beta")}
    assert listed == {"alpha": {ZORBLAX[0], PAPER}, "beta": {VELLICHOR[0]}}

"""The official openai client, unchanged, against Axiom's OpenAI-compatible API, with the real bundled model."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest

from tests.api.server import serve
from tests.api.support import assert_error, upload

NOTES = ("axolotl.txt", b"Axolotls can regrow their limbs, their hearts and even parts of their brains.")
QUESTION = "What can axolotls regrow?"


@pytest.fixture(scope="module")
def server(build_app_services, tmp_path_factory):
    with serve(build_app_services(tmp_path_factory.mktemp("openai"))) as running:
        with httpx.Client(base_url=running.url) as client:
            assert upload(client, "pets", NOTES).status_code == 200
        yield running


@pytest.fixture
def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="not-checked", max_retries=0, timeout=600)


def assert_sources_are_the_notes(sources: list[dict]) -> None:
    assert sources and {source["filename"] for source in sources} == {NOTES[0]}


def test_the_model_list_has_axiom(client):
    assert [model.id for model in client.models.list()] == ["axiom"]


def test_a_completion_answers_from_the_chat_named_in_the_header(client):
    completion = client.chat.completions.create(
        model="axiom",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}],
        extra_headers={"X-Axiom-Chat-Id": "pets"},
    )
    assert completion.object == "chat.completion" and completion.model == "axiom"
    (choice,) = completion.choices
    assert choice.finish_reason == "stop" and choice.message.role == "assistant" and choice.message.content.strip()
    extra = completion.model_extra
    assert_sources_are_the_notes(extra["axiom_sources"])
    assert extra["axiom"]["answer"] == choice.message.content and extra["axiom"]["chat_id"] == "pets"


def test_a_streamed_completion_comes_in_chunks_from_the_chat_named_in_metadata(client):
    chunks = list(client.chat.completions.create(
        model="axiom", messages=[{"role": "user", "content": QUESTION}], metadata={"chat_id": "pets"}, stream=True,
    ))
    assert all(chunk.object == "chat.completion.chunk" and chunk.model == "axiom" for chunk in chunks)
    assert len({chunk.id for chunk in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
    assert text.strip()
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop"
    assert all(chunk.choices[0].finish_reason is None for chunk in chunks[:-1])
    assert_sources_are_the_notes(last.model_extra["axiom_sources"])
    assert last.model_extra["axiom"]["chat_id"] == "pets" and last.model_extra["axiom"]["answer"].strip()


def test_without_the_chats_documents_nothing_is_cited(client):
    """Another chat (here the default one) has no documents: the same question finds nothing to cite."""
    completion = client.chat.completions.create(model="axiom", messages=[{"role": "user", "content": QUESTION}])
    assert completion.model_extra["axiom_sources"] == []
    assert completion.model_extra["axiom"]["chat_id"] == "default"


def test_an_unknown_model_is_404(client):
    with pytest.raises(openai.NotFoundError) as raised:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
    assert raised.value.response.json()["details"] == {"model": "gpt-4o"}


@pytest.mark.parametrize(
    "messages",
    [[{"role": "system", "content": "No question here."}], [], [{"role": "user", "content": "   "}]],
)
def test_a_request_without_a_question_is_400(client, messages):
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="axiom", messages=messages)
    assert raised.value.response.json()["error"] == "VALIDATION_ERROR"


@pytest.mark.parametrize("content", ["   ", "x" * 2001, [{"type": "image_url", "image_url": {"url": "x"}}]])
def test_a_question_without_text_or_too_long_names_messages_and_the_document_says_so(server, content):
    """The 400 named "message", a field this body does not have, and /openapi.json did not state the rule."""
    body = {"model": "axiom", "messages": [{"role": "user", "content": content}]}
    response = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=600)
    refused = assert_error(response, 400, "VALIDATION_ERROR", field="messages", max_chars=2000)
    assert refused["message"].startswith("Invalid messages: the last user message should have ")
    document = httpx.get(f"{server.url}/openapi.json").json()
    described = document["components"]["schemas"]["ChatCompletionRequest"]["properties"]["messages"]["description"]
    assert "at most 2000 characters" in described and "not only spaces" in described


@pytest.mark.parametrize("stream", ["false", "no", 1])
def test_stream_is_a_boolean_not_anything_truthy(server, stream):
    """"false" was read as true (and 1 as well): the client got a stream it had not asked for."""
    body = {"model": "axiom", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}
    response = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=600)
    assert_error(response, 400, "VALIDATION_ERROR", field="stream")


@pytest.mark.parametrize("n", [2, 0])
def test_more_than_one_choice_is_400_not_one_choice_answered_as_all(server, n):
    body = {"model": "axiom", "n": n, "messages": [{"role": "user", "content": "hi"}]}
    response = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=600)
    assert_error(response, 400, "VALIDATION_ERROR", field="n")
    document = httpx.get(f"{server.url}/openapi.json").json()
    declared = document["components"]["schemas"]["ChatCompletionRequest"]["properties"]["n"]
    assert {"minimum": 1, "maximum": 1}.items() <= declared["anyOf"][0].items()


def test_the_openapi_document_says_a_completion_may_be_a_stream(server):
    """A generated client was told JSON only, and got server-sent events for stream: true."""
    document = httpx.get(f"{server.url}/openapi.json").json()
    declared = document["paths"]["/v1/chat/completions"]["post"]["responses"]["200"]["content"]
    assert set(declared) == {"application/json", "text/event-stream"}


def test_a_question_given_as_content_parts_is_read(client):
    completion = client.chat.completions.create(
        model="axiom", messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    )
    assert completion.model_extra["axiom"]["answer_kind"] == "fixed"


def test_several_clients_at_once_all_get_their_answer(client):
    def ask_streaming(n: int) -> tuple[str, dict]:
        chunks = list(client.chat.completions.create(
            model="axiom", messages=[{"role": "user", "content": QUESTION}], stream=True,
            metadata={"chat_id": "pets", "session_id": f"together-{n}"},
        ))
        return chunks[-1].choices[0].finish_reason, chunks[-1].model_extra["axiom"]

    with ThreadPoolExecutor(4) as pool:
        endings = list(pool.map(ask_streaming, range(4)))

    # Before the queue, the second of two concurrent requests got an error chunk: now everyone waits their turn.
    assert [reason for reason, _ in endings] == ["stop"] * 4
    assert all(axiom["answer"] and axiom["answer_kind"] in {"generated", "extractive"} for _, axiom in endings)

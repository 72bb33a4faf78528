"""The whole pipeline with the bundled SmolLM2-135M on a real PDF: what a user of the default install gets."""

import pytest

from backend.rag.prompts import FIXED_REPLIES, NOT_FOUND_REPLY

PAPER = "academic_2col_squad_rajpurkar2016.pdf"


@pytest.fixture(scope="module")
def squad_chat(tmp_path_factory, embedder, bundled_llm, shared_data):
    from backend.config import Settings
    from backend.container import build_services

    services = build_services(
        Settings(data_dir=tmp_path_factory.mktemp("real-model")), embedder=embedder, llm=bundled_llm
    )
    services.ingestion.ingest("squad", PAPER, (shared_data / "pdfs" / PAPER).read_bytes())
    return services


def ask(services, question, session):
    events = list(services.pipeline.stream(question, chat_id="squad", session_id=session))
    return events[-1]["result"], events


def test_a_question_is_answered_with_citations_to_the_right_file_and_page(squad_chat):
    result, events = ask(squad_chat, "How much were the crowdworkers paid per hour?", "real-1")
    assert result.answer_kind in ("generated", "extractive"), result.answer
    assert any(e["type"] == "token" for e in events)
    assert result.sources and result.sources[0]["filename"] == PAPER
    cited_pages = {p["page"] for source in result.sources for p in source["passages"]}
    assert 4 in cited_pages  # "paid $9 per hour" is on page 4
    assert result.is_grounded


def test_small_talk_and_nonsense_skip_the_pipeline(squad_chat):
    assert ask(squad_chat, "hi", "real-2")[0].answer == FIXED_REPLIES["greeting"]
    assert ask(squad_chat, "thanks", "real-2")[0].answer == FIXED_REPLIES["gratitude"]
    assert ask(squad_chat, "asdfgh", "real-2")[0].answer == FIXED_REPLIES["garbage"]


def test_tell_me_more_builds_on_the_previous_answer(squad_chat):
    first, _ = ask(squad_chat, "How much were the crowdworkers paid per hour?", "real-3")
    more, events = ask(squad_chat, "tell me more", "real-3")
    assert more.intent == "followup" and more.answer_kind == "transformed"
    assert more.sources == first.sources and more.answer.strip()
    assert any(e["type"] == "token" for e in events)


def test_a_question_the_paper_cannot_answer_gets_the_honest_reply(squad_chat):
    result, _ = ask(squad_chat, "What is a good recipe for chocolate cake?", "real-4")
    assert result.answer == NOT_FOUND_REPLY and not result.answer_synthesized

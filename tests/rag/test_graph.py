"""The graph end to end on real stores and the real embedder, with a scripted LLM so each route is forced."""

import threading
import time
import uuid

import pytest
import sqlalchemy

from backend.errors import ChatWasDeleted
from backend.rag.graph import (
    route_after_check,
    route_after_gather,
    route_after_generate,
    route_after_grade,
    route_by_answerability,
    route_by_complexity,
    route_by_intent,
)
from backend.rag.nodes.remember import SOURCES_REMOVED_REASON
from backend.rag.prompts import (
    BUSY_EVIDENCE_PREFIX,
    CLOSEST_PASSAGES_PREFIX,
    FIXED_REPLIES,
    NO_DOCUMENTS_REPLY,
    NOT_ANSWERED_REPLY,
    NOT_FOUND_REPLY,
)
from backend.stores.jobs import JobRecord
from tests.rag.scripted import ScriptedLLM
from tests.support.model_queue import model_busy

CARE = """Axolotl care guide.

The axolotl is a salamander native to Lake Xochimilco in Mexico. Axolotls can regrow entire limbs, parts of their
heart and even parts of their brain.

Water temperature for axolotls should stay between 16 and 18 degrees Celsius. Temperatures above 24 degrees
cause stress and disease.

Axolotls eat earthworms, bloodworms and specially made pellets. Adults are fed two or three times a week."""

GROUNDED = "Water temperature for axolotls should stay between 16 and 18 degrees Celsius [Source 1]."
INVENTED = "Axolotls live in the Amazon river and each one eats 40 kilograms of rice per day [Source 1]."


@pytest.fixture
def chat(tmp_path, make_services):
    def build(*answers, documents=True, seconds_per_word=0.0, **overrides):
        llm = ScriptedLLM(*answers, seconds_per_word=seconds_per_word)
        services = make_services(tmp_path / "data", llm=llm, **overrides)
        if documents:
            services.ingestion.ingest("pets", "care.txt", CARE.encode())
        return services, llm

    return build


def ask(services, question, session="s1"):
    events = list(services.pipeline.stream(question, chat_id="pets", session_id=session))
    return events[-1]["result"], events


# --- the conditional edges, as pure functions -------------------------------------------------------------------

def test_route_by_intent():
    assistant = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    assert route_by_intent({"detected_intent": "greeting"}) == "reply_fixed"
    assert route_by_intent({"detected_intent": "off_topic"}) == "reply_fixed"
    assert route_by_intent({"detected_intent": "clarify_needed"}) == "reply_fixed"
    assert route_by_intent({"detected_intent": "question"}) == "classify_complexity"
    assert route_by_intent({"detected_intent": "command"}) == "classify_complexity"
    assert route_by_intent({"detected_intent": "followup", "history": assistant}) == "transform_previous"
    assert route_by_intent({"detected_intent": "simplify", "history": []}) == "classify_complexity"


def test_route_by_complexity_and_grade():
    assert route_by_complexity({"is_summarization": True, "skip_rewrite": True}) == "gather_for_summary"
    assert route_by_complexity({"is_summarization": False, "skip_rewrite": True}) == "retrieve"
    assert route_by_complexity({"is_summarization": False, "skip_rewrite": False}) == "rewrite_query"
    assert route_after_grade({"relevant_documents": ["p"]}) == "judge_answerability"
    assert route_after_grade({"relevant_documents": []}) == "reply_not_found"
    assert route_by_answerability({"answerable": True}) == "present_evidence"
    assert route_by_answerability({"answerable": False}) == "reply_not_found"
    assert route_after_gather({"relevant_documents": ["p"]}) == "generate"
    assert route_after_gather({"relevant_documents": []}) == "reply_not_found"


def test_route_after_generate_answers_with_the_evidence_when_the_model_was_too_busy():
    assert route_after_generate({"answer": "x"}) == "check_groundedness"
    assert route_after_generate({"model_busy": True}) == "answer_extractively"


def test_route_after_check_retries_then_falls_back():
    assert route_after_check({"is_grounded": True, "iteration": 1}, max_retries=2) == "remember"
    assert route_after_check({"is_grounded": False, "iteration": 1}, max_retries=2) == "generate"
    assert route_after_check({"is_grounded": False, "iteration": 2}, max_retries=2) == "generate"
    assert route_after_check({"is_grounded": False, "iteration": 3}, max_retries=2) == "answer_extractively"


def test_route_after_check_does_not_regenerate_while_others_wait_for_the_model():
    waiting = {"is_grounded": False, "iteration": 1, "others_waiting": True}
    assert route_after_check(waiting, max_retries=2) == "answer_extractively"


# --- whole runs -------------------------------------------------------------------------------------------------

def test_greeting_and_thanks_skip_retrieval_and_the_llm(chat):
    services, llm = chat("unused")
    for message, intent in (("hi", "greeting"), ("thanks!", "gratitude")):
        result, events = ask(services, message)
        assert result.answer == FIXED_REPLIES[intent] and result.answer_kind == "fixed"
        assert not any(step.startswith("retrieve") for step in result.processing_steps)
        assert [e["content"] for e in events if e["type"] == "token"] == [result.answer]
    assert llm.prompts == []


def test_keyboard_mash_is_rejected_kindly(chat):
    services, llm = chat("unused")
    result, _ = ask(services, "asdfgh")
    assert result.intent == "garbage" and result.answer == FIXED_REPLIES["garbage"]
    assert llm.prompts == []


@pytest.mark.parametrize("noise", ["asdkjhasd", "lkjlkj lkjlkj", "the the the", "#$%^ sdf&*("])
def test_noise_gets_the_garbage_reply_even_after_an_answer(chat, noise):
    """Issue 11: after an answer, "the the the" was a follow-up that rewrote that answer."""
    services, llm = chat(GROUNDED)
    first, _ = ask(services, "What water temperature do axolotls need?")
    for session in ("fresh", "s1"):  # without, then with a previous answer
        result, events = ask(services, noise, session=session)
        assert result.intent == "garbage" and result.answer == FIXED_REPLIES["garbage"]
        assert [e["content"] for e in events if e["type"] == "token"] == [FIXED_REPLIES["garbage"]]
    assert len(llm.prompts) == 1  # only the first question's answer: noise never reaches the model
    assert services.memory.history("s1")[1].content == first.answer


def test_a_looping_model_is_stopped_after_one_round(chat):
    services, llm = chat(GROUNDED + " " + " ".join([GROUNDED] * 60))  # some 700 words if it ran to the end
    result, _ = ask(services, "What water temperature do axolotls need?")
    assert result.answer == GROUNDED and result.is_grounded and result.iterations == 1
    assert llm.words_streamed <= 2 * len(GROUNDED.split())


def test_a_grounded_answer_is_cited_and_remembered(chat):
    services, llm = chat(GROUNDED)
    result, events = ask(services, "What water temperature do axolotls need?")
    assert result.answer_kind == "generated" and result.is_grounded and result.iterations == 1
    assert [s["filename"] for s in result.sources] == ["care.txt"]
    assert result.sources[0]["source_numbers"] == [1] and result.sources[0]["page"] == 1
    assert "[Source 1: care.txt (Page 1)]" in llm.prompts[0][-1]["content"]
    assert [e["stage"] for e in events if e["type"] == "status"] == ["retrieving", "generating", "checking"]
    # Evidence first: the passages and the quotes arrive before the model writes a word.
    kinds = [e["type"] for e in events]
    assert kinds.index("sources") < kinds.index("evidence") < kinds.index("token")
    evidence = next(e for e in events if e["type"] == "evidence")
    assert "16 and 18 degrees" in evidence["text"] and "[Source 1]" in evidence["text"]
    assert next(e for e in events if e["type"] == "sources")["sources"][0]["filename"] == "care.txt"
    history = services.memory.history("s1")
    assert [m.role for m in history] == ["user", "assistant"]
    assert history[1].metadata["sources"][0]["filename"] == "care.txt" and history[1].metadata["is_grounded"]


def test_an_uncited_but_supported_sentence_gets_its_citation(chat):
    services, _ = chat("Axolotls eat earthworms, bloodworms and specially made pellets.")
    result, _ = ask(services, "What do axolotls eat?")
    assert "[Source 1]" in result.answer and result.sources[0]["filename"] == "care.txt"


def test_an_invented_answer_is_retried_with_feedback_then_replaced_by_quotes(chat):
    services, llm = chat(INVENTED)
    result, events = ask(services, "Where do axolotls live and what do they eat?")
    assert result.iterations == 3  # the first answer and two retries
    assert "claims the sources do not support" in llm.prompts[1][-1]["content"]
    assert "Amazon" in llm.prompts[1][-1]["content"]  # the issues found are the feedback
    assert sum(e["type"] == "retry" for e in events) == 3  # two regenerations, then the fallback
    assert result.answer_kind == "extractive" and not result.answer_synthesized
    assert "Amazon" not in result.answer and "[Source 1]" in result.answer
    assert result.sources[0]["filename"] == "care.txt"
    assert services.memory.history("s1")[1].metadata["answer_kind"] == "extractive"


def test_a_question_the_documents_cannot_answer_gets_the_honest_reply_without_the_llm(chat):
    services, llm = chat("unused")
    result, _ = ask(services, "What is the capital of Australia?")
    assert result.answer == NOT_FOUND_REPLY and result.answer_kind == "not_found"
    assert not result.answer_synthesized and result.sources == []
    assert llm.prompts == []


def test_an_on_topic_question_the_documents_do_not_answer_ends_in_not_found_with_the_closest_passages(chat):
    services, llm = chat(GROUNDED)
    result, events = ask(services, "Who discovered the axolotl?")  # about axolotls, but no name is given
    assert result.answer_kind == "not_found" and result.evidence_reason == "closest"
    assert result.answer.startswith(f"{NOT_ANSWERED_REPLY}\n\n{CLOSEST_PASSAGES_PREFIX}\n- “")
    assert [s["filename"] for s in result.sources] == ["care.txt"]
    assert not result.answer_synthesized and llm.prompts == []
    assert not any(e["type"] == "evidence" for e in events)  # nothing is presented as an answer first
    assert services.memory.history("s1")[1].metadata["evidence_reason"] == "closest"


def test_an_answerable_question_still_gets_answered(chat):
    services, llm = chat(GROUNDED)
    result, _ = ask(services, "What water temperature do axolotls need?")
    assert any(step.startswith("answerable:yes") for step in result.processing_steps)
    assert result.answer_kind == "generated" and len(llm.prompts) == 1


def test_a_chat_without_documents_says_so(chat):
    services, llm = chat("unused", documents=False)
    result, _ = ask(services, "What water temperature do axolotls need?")
    assert result.answer == NO_DOCUMENTS_REPLY and llm.prompts == []


def queue_job(services, filename):
    """A file waiting for a background worker (none runs here: the job stays queued, as a 400-page PDF stays
    indexing for minutes)."""
    services.jobs.add(JobRecord(uuid.uuid4().hex, "pets", filename, 10, "queued", None, None, time.time()),
                      filename, b"not read here")


def test_a_chat_whose_only_file_is_still_indexing_says_so_not_that_it_has_no_documents(chat):
    services, llm = chat("unused", documents=False)
    queue_job(services, "manual.pdf")
    result, _ = ask(services, "What water temperature do axolotls need?")
    assert result.answer_kind == "not_found" and llm.prompts == []
    assert result.answer != NO_DOCUMENTS_REPLY and "Upload a file" not in result.answer
    assert "“manual.pdf” is still being indexed" in result.answer


def test_not_found_says_which_files_were_not_searched_yet(chat):
    services, llm = chat("unused")
    queue_job(services, "a.pdf")
    queue_job(services, "b.docx")
    result, _ = ask(services, "What is the capital of Australia?")
    assert result.answer_kind == "not_found" and llm.prompts == []
    assert result.answer == f"{NOT_FOUND_REPLY} “a.pdf” and “b.docx” are still being indexed, so they were not " \
        "searched yet: ask again once they are ready."


def test_closest_passages_say_which_files_were_not_searched_yet_naming_the_first_few(chat):
    services, _ = chat(GROUNDED)
    for name in ("a.pdf", "b.pdf", "c.pdf", "d.pdf"):
        queue_job(services, name)
    result, _ = ask(services, "Who discovered the axolotl?")
    assert result.answer_kind == "not_found" and result.evidence_reason == "closest"
    assert result.answer.startswith(f"{NOT_ANSWERED_REPLY} “a.pdf”, “b.pdf” and 2 more files are still being "
                                    f"indexed, so they were not searched yet: ask again once they are ready.\n\n"
                                    f"{CLOSEST_PASSAGES_PREFIX}\n- “")
    assert [s["filename"] for s in result.sources] == ["care.txt"]


def test_tell_me_more_reworks_the_previous_answer_with_its_sources(chat):
    services, llm = chat(GROUNDED, "More detail: above 24 degrees axolotls get stressed.")
    first, _ = ask(services, "What water temperature do axolotls need?")
    more, _ = ask(services, "tell me more")
    assert more.intent == "followup" and more.answer_kind == "transformed"
    assert more.sources == first.sources
    prompt = llm.prompts[-1][-1]["content"]
    assert first.answer in prompt and "Temperatures above 24 degrees" in prompt
    assert not any(step.startswith("retrieve") for step in more.processing_steps)


def test_tell_me_more_after_its_document_was_deleted_does_not_cite_or_rework_it(chat):
    services, llm = chat(GROUNDED, "More detail: above 24 degrees axolotls get stressed.")
    first, _ = ask(services, "What water temperature do axolotls need?")
    assert first.sources[0]["filename"] == "care.txt"
    services.ingestion.delete("pets", first.sources[0]["document_id"])

    more, _ = ask(services, "tell me more")
    assert more.intent == "followup" and more.sources == []
    assert "“care.txt”" in more.answer and "removed" in more.answer
    assert len(llm.prompts) == 1  # the deleted document's answer was not reworked by the model


def test_a_follow_up_question_is_rewritten_with_the_conversation(chat):
    services, llm = chat(GROUNDED, "what do axolotls eat", "Axolotls eat earthworms [Source 1].")
    ask(services, "What water temperature do axolotls need?")
    result, _ = ask(services, "and what do they eat?")
    assert result.query_complexity == "conversational"
    assert "Last question: and what do they eat?" in llm.prompts[1][-1]["content"]
    assert "rewrite:used" in result.processing_steps


def test_summaries_read_the_whole_chat_in_page_order(chat):
    services, llm = chat("The guide covers where axolotls live, their water and their food [Source 1].")
    result, _ = ask(services, "summarize the documents")
    assert result.is_summarization and result.query_complexity == "summarize"
    assert "Lake Xochimilco" in llm.prompts[0][-1]["content"] and "bloodworms" in llm.prompts[0][-1]["content"]


def test_stopping_mid_answer_closes_the_llm_stream_and_saves_nothing(chat):
    services, llm = chat(" ".join(["word"] * 500), seconds_per_word=0.02)  # 10 s if never stopped
    stream = services.pipeline.stream("What water temperature do axolotls need?", chat_id="pets", session_id="s1")
    for event in stream:
        if event["type"] == "token":
            break
    stream.close()
    deadline = time.monotonic() + 10
    while llm.closed_streams == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert llm.closed_streams == 1
    assert services.memory.history("s1") == []
    assert len(llm.prompts) == 1  # generation ended there: no retry, no second answer
    assert llm.words_streamed < 100  # stopped early, not after the model ran to the end of its answer


def test_an_answer_whose_document_is_deleted_while_it_is_written_is_neither_sent_nor_saved_citing_it(chat):
    services, _ = chat(GROUNDED, seconds_per_word=0.05)
    document_id = services.documents.list("pets")[0].document_id
    events = []
    for event in services.pipeline.stream("What water temperature do axolotls need?", chat_id="pets",
                                          session_id="s1"):
        events.append(event)
        if event["type"] == "token" and services.documents.list("pets"):
            services.ingestion.delete("pets", document_id)  # in another window, as the answer is written
    result = events[-1]["result"]
    assert result.sources == [] and "16 and 18 degrees" not in result.answer
    assert "“care.txt”" in result.answer and "removed" in result.answer and result.answer_kind == "fixed"
    assert events[-3] == {"type": "retry", "reason": SOURCES_REMOVED_REASON, "code": "sources_removed"}
    assert events[-2] == {"type": "token", "content": result.answer}
    assert result.answer.startswith("“care.txt”, which this answer was drawn from, was removed")
    saved = services.memory.history("s1")[1]
    assert saved.content == result.answer and saved.metadata["sources"] == []


def test_saving_an_answer_reads_only_its_cited_documents_and_none_for_a_reply_without_sources(chat):
    """Checking for removed sources read every document row of the chat for every answer, a greeting too."""
    services, _ = chat(GROUNDED)
    run = []

    def record(_connection, _cursor, statement, *_args) -> None:
        if "FROM documents" in statement:
            run.append(statement)

    sqlalchemy.event.listen(services.database, "before_cursor_execute", record)
    try:
        ask(services, "hi")
        assert run == []
        ask(services, "What water temperature do axolotls need?")
        assert [s for s in run if "documents.document_id IN" in s and "documents.status" in s]  # when saved
    finally:
        sqlalchemy.event.remove(services.database, "before_cursor_execute", record)


def test_an_answer_whose_chat_is_deleted_while_it_is_written_is_refused_without_a_sources_removed_reply(chat):
    """Deleting a chat clears its conversation, then removes its documents: an answer saved in between (or
    on another replica) found its documents gone and was replaced by "… was removed from this chat" before it
    was refused as deleted."""
    services, _ = chat(GROUNDED, seconds_per_word=0.05)
    events = []
    with pytest.raises(ChatWasDeleted):
        for event in services.pipeline.stream("What water temperature do axolotls need?", chat_id="pets",
                                              session_id="s1"):
            events.append(event)
            if event["type"] == "token" and services.documents.list("pets"):
                services.memory.clear_chat("pets")  # as Chats.delete does, in another request
                services.ingestion.delete_chat("pets")
    assert not any(e["type"] == "retry" for e in events)
    assert not any("removed" in e.get("content", "") for e in events if e["type"] == "token")


def test_a_question_that_would_wait_too_long_for_the_model_gets_the_evidence_answer(chat):
    services, llm = chat(GROUNDED, llm_queue_patience_seconds=0)
    with model_busy(services.llm.scheduler):  # the model is busy with other chats
        result, events = ask(services, "What water temperature do axolotls need?")

    assert result.answer_kind == "extractive" and result.evidence_reason == "busy" and result.is_grounded
    assert result.answer.startswith(BUSY_EVIDENCE_PREFIX) and "16 and 18 degrees" in result.answer
    assert result.sources[0]["filename"] == "care.txt"
    assert llm.prompts == [] and not any(e["type"] == "retry" for e in events)
    assert services.memory.history("s1")[1].metadata["evidence_reason"] == "busy"


def stopped_once_queued(services) -> list[dict]:
    """The events of a question about axolotls in chat "pets" (session "s1") while the model is busy, Stop pressed
    once it is told its place in the model's queue; the queue holds nothing of it after."""
    cancel = threading.Event()
    events = []
    with model_busy(services.llm.scheduler):
        for event in services.pipeline.stream(
            "What water temperature do axolotls need?", chat_id="pets", session_id="s1", cancel=cancel
        ):
            events.append(event)
            if event["type"] == "status" and event["stage"] == "queued":
                cancel.set()  # Stop, while the question waits for the model
        assert services.llm.scheduler.waiting == 0
    return events


def test_a_waiting_question_is_told_its_place_and_stop_takes_it_out_of_the_queue(chat):
    services, llm = chat(GROUNDED)
    events = stopped_once_queued(services)
    queued = next(e for e in events if e["type"] == "status" and e["stage"] == "queued")
    assert queued["position"] == 0 and "next" in queued["message"]
    assert "result" not in [e["type"] for e in events]
    assert llm.prompts == [] and services.memory.history("s1") == []


class StillReadingLLM(ScriptedLLM):
    """A model that is still reading its prompt when the asker stops: it ends its stream quietly, having written
    nothing, as the embedded model does when told to stop between two prompt batches."""

    def stream(self, messages, params, cancelled=None):
        self.prompts.append(list(messages))
        while not cancelled():
            time.sleep(0.01)
        yield from ()


def test_stop_while_the_model_reads_the_prompt_saves_nothing(tmp_path, make_services):
    llm = StillReadingLLM("unused")
    services = make_services(tmp_path / "data", llm=llm)
    services.ingestion.ingest("pets", "care.txt", CARE.encode())
    cancel = threading.Event()
    events = []
    for event in services.pipeline.stream(
        "What water temperature do axolotls need?", chat_id="pets", session_id="s1", cancel=cancel
    ):
        events.append(event)
        if event["type"] == "status" and event["stage"] == "generating":
            cancel.set()  # Stop, while the model has written nothing yet

    assert len(llm.prompts) == 1 and "result" not in [e["type"] for e in events]
    assert services.memory.history("s1") == []  # no "documents do not contain this" saved in its place

"""Each node called on its own with a state dict and its dependencies, no graph."""

import threading

import pytest

from backend.errors import SynthesisFailed
from backend.llm.scheduler import Waiter
from backend.models import Chunk, Parent, Passage
from backend.rag.citations import add_missing_citations, build_context, cited_numbers, cited_sources
from backend.rag.nodes.answerability import judge_answerability
from backend.rag.nodes.evidence import present_evidence
from backend.rag.nodes.generate import generate
from backend.rag.nodes.grade import grade_documents
from backend.rag.nodes.groundedness import answer_extractively, check_groundedness
from backend.rag.nodes.handlers import reply_not_found, reply_sources_removed_mid_answer
from backend.rag.nodes.intent import classify_intent
from backend.rag.nodes.remember import remember
from backend.rag.nodes.retrieve import retrieve
from backend.rag.nodes.rewrite import clean_rewrite
from backend.rag.nodes.route import complexity_of
from backend.rag.prompts import (
    BUSY_EVIDENCE_PREFIX,
    CLOSEST_PASSAGES_PREFIX,
    EXTRACTIVE_PREFIX,
    NOT_ANSWERED_REPLY,
    NOT_FOUND_REPLY,
)
from tests.rag.scripted import ScriptedLLM
from tests.rag.test_graph import CARE
from tests.support.model_queue import model_busy


def passage(n: int, text: str, filename: str = "a.pdf", page: int = 1, document: str = "d1") -> Passage:
    parent = Parent(f"{document}-p{n}", document, filename, page, text)
    child = Chunk(f"{document}-p{n}-c0", parent.parent_id, document, filename, page, text[:400])
    return Passage(parent, child, 0.9 - n / 100, (child,))


PASSAGES = [
    passage(0, "The bridge opened in 1932 and carries eight lanes of traffic.", "bridge.pdf", 3, "b"),
    passage(1, "Its steel arch spans 503 metres across the harbour.", "bridge.pdf", 4, "b"),
    passage(2, "The opera house was designed by Jørn Utzon.", "opera.pdf", 1, "o"),
]


@pytest.fixture
def deps(tmp_path, make_services):
    def build(*answers):
        services = make_services(tmp_path / "data", llm=ScriptedLLM(*answers or ("unused",)))
        services.ingestion.ingest("pets", "care.txt", CARE.encode())
        return services.pipeline.deps

    return build


def test_complexity_router():
    history = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    assert complexity_of("What temperature do axolotls need?", []) == "simple"
    assert complexity_of("Summarize the documents", []) == "summarize"
    assert complexity_of("give me an overview", history) == "summarize"
    assert complexity_of("what do they eat?", history) == "conversational"
    assert complexity_of("and the second one?", history) == "conversational"
    assert complexity_of("what do they eat?", []) == "simple"  # no history: nothing to resolve against
    assert complexity_of("Compare the two methods and explain why one is faster", []) == "complex"


def test_a_rewrite_is_kept_only_when_it_is_a_plausible_query():
    assert clean_rewrite('Search query: "axolotl diet"', "what do they eat?", "axolotl care") == "axolotl diet"
    assert clean_rewrite("", "what do they eat?", "") is None
    assert clean_rewrite("Bananas are yellow fruit", "what do they eat?", "axolotl care") is None
    assert clean_rewrite("word " * 60, "what do they eat", "") is None
    assert clean_rewrite("What do they eat?", "what do they eat?", "") is None


def test_context_is_numbered_and_fits_the_budget():
    long = [passage(i, f"Sentence {i}. " + "filler words here " * 300) for i in range(5)]
    context, used = build_context(long, lambda text: len(text) // 4, budget_tokens=600)
    assert len(context) // 4 <= 600
    assert context.startswith("[Source 1: a.pdf (Page 1)]") and "[Source 2: a.pdf (Page 1)]" in context
    assert used == long[: len(used)] and len(used) >= 3  # shares, not the first passage alone


def test_citations_are_parsed_checked_and_grouped_per_document():
    assert cited_numbers("A [Source 2]. B [Source 1, 2]. C [Sources 3 and 1].") == [2, 1, 3]
    answer = add_missing_citations("The bridge opened in 1932. Its arch spans 503 metres [Source 9].", PASSAGES)
    assert answer == "The bridge opened in 1932 [Source 1]. Its arch spans 503 metres [Source 2]."
    sources = cited_sources(answer + " It was designed by Jørn Utzon [Source 3].", PASSAGES)
    assert [(s["filename"], s["pages"], s["source_numbers"]) for s in sources] == [
        ("bridge.pdf", [3, 4], [1, 2]), ("opera.pdf", [1], [3])
    ]
    assert sources[0]["passages"][1]["excerpt"].startswith("Its steel arch")


def test_classify_intent_reads_the_conversation(deps):
    d = deps()
    d.memory.add_exchange("s1", "What temperature?", "16 to 18 degrees [Source 1].", {"sources": []})
    update = classify_intent({"question": "tell me more", "session_id": "s1", "chat_id": "pets"}, d)
    assert update["detected_intent"] == "followup" and [m["role"] for m in update["history"]] == ["user", "assistant"]
    assert classify_intent({"question": "tell me more", "session_id": "fresh", "chat_id": "pets"}, d)["detected_intent"] == "question"


def test_retrieve_then_grade(deps):
    d = deps()
    found = retrieve({"question": "What do axolotls eat?", "chat_id": "pets"}, d)
    assert found["retrieved_documents"] and not found["collection_empty"]
    graded = grade_documents({"question": "What do axolotls eat?", **found}, d)
    assert "bloodworms" in graded["relevant_documents"][0].parent.text
    assert retrieve({"question": "anything", "chat_id": "empty"}, d)["collection_empty"]


def test_answerability_keeps_the_passages_near_the_best_and_decides_from_their_sentences(deps):
    d = deps()
    ranked = [*PASSAGES[:2], passage(5, "A passage far below the best.")]
    ranked[2] = Passage(ranked[2].parent, ranked[2].best_chunk, 0.2, ranked[2].matched_chunks)
    answerable = judge_answerability({"question": "When did the bridge open?", "relevant_documents": ranked}, d)
    assert answerable["answerable"] and answerable["relevant_documents"] == PASSAGES[:2]
    assert answerable["processing_steps"][0].startswith("answerable:yes (time")
    unanswerable = judge_answerability({"question": "Who built the bridge?", "relevant_documents": ranked}, d)
    assert not unanswerable["answerable"] and unanswerable["processing_steps"][0].startswith("answerable:no")


def test_the_asked_question_is_judged_not_its_rewrite(deps):
    state = {"question": "Who built it?", "rewritten_query": "When did the bridge open?",
             "relevant_documents": PASSAGES[:2]}
    assert not judge_answerability(state, deps())["answerable"]


def test_not_found_lists_the_closest_passages_labelled_as_no_answer(deps):
    d = deps()
    update = reply_not_found(
        {"question": "Who built the bridge?", "relevant_documents": PASSAGES[:2], "chat_id": "pets"}, d
    )
    assert update["answer"].startswith(f"{NOT_ANSWERED_REPLY}\n\n{CLOSEST_PASSAGES_PREFIX}\n- “")
    assert update["answer_kind"] == "not_found" and update["evidence_reason"] == "closest"
    assert [s["filename"] for s in update["sources"]] == ["bridge.pdf"]
    nothing = reply_not_found({"question": "Who built the bridge?", "relevant_documents": [], "chat_id": "pets"}, d)
    assert nothing["answer"] == NOT_FOUND_REPLY and nothing["sources"] == [] and "evidence_reason" not in nothing


def test_generate_cites_and_refuses_to_overflow_the_window(deps):
    d = deps("The bridge opened in 1932 [Source 1].")
    update = generate({"question": "When did it open?", "relevant_documents": PASSAGES, "iteration": 0, "chat_id": "pets"}, d)
    assert update["iteration"] == 1 and update["answer_kind"] == "generated"
    assert update["sources"][0]["filename"] == "bridge.pdf"
    history = [{"role": "user", "content": "x" * 600}] * 5
    d.llm.context_window = 500  # scripted model: pretend the window is tiny
    with pytest.raises(SynthesisFailed):
        generate({"question": "q" * 3000, "relevant_documents": PASSAGES, "history": history, "iteration": 0, "chat_id": "pets"}, d)


def test_generate_stops_a_model_that_loops_and_keeps_one_round(deps):
    round_ = "The bridge opened in 1932 [Source 1]. Its steel arch spans 503 metres across the harbour [Source 2]. "
    d = deps(round_ * 40)  # about 700 words if it ran to the end
    update = generate({"question": "Tell me about the bridge", "relevant_documents": PASSAGES, "iteration": 0,
                       "chat_id": "pets"}, d)
    assert update["answer"] == round_.strip()
    scripted = d.llm.provider
    assert scripted.words_streamed <= 2 * len(round_.split()) and scripted.closed_streams == 1


def test_generate_recognises_the_models_own_decline(deps):
    update = generate({"question": "Who?", "relevant_documents": PASSAGES, "iteration": 0, "chat_id": "pets"},
                      deps("The documents do not contain this information."))
    assert update["answer_kind"] == "not_found" and update["sources"] == []


OPENED = "When did the bridge open?"


def test_check_groundedness(deps):
    d = deps()
    grounded = check_groundedness(
        {"answer": "The bridge opened in 1932 [Source 1].", "question": OPENED, "relevant_documents": PASSAGES,
         "chat_id": "pets"}, d
    )
    assert grounded["is_grounded"]
    invented = check_groundedness({"answer": "The bridge opened in 1990 and has 12 lanes [Source 1].",
                                   "question": OPENED, "relevant_documents": PASSAGES, "chat_id": "pets"}, d)
    assert not invented["is_grounded"] and "1990" in invented["hallucination_details"]


def test_an_answer_restating_the_question_is_not_grounded(deps):
    # Every word is in the source, and every word is the question's: it answers nothing.
    update = check_groundedness({"answer": "The bridge opened [Source 1].", "question": OPENED,
                                 "relevant_documents": PASSAGES, "chat_id": "pets"}, deps())
    assert not update["is_grounded"] and "restates the question" in update["hallucination_details"]


def test_the_rewritten_question_counts_as_said(deps):
    state = {"answer": "The bridge opened in 1932 [Source 1].", "question": "And that?",
             "rewritten_query": OPENED, "relevant_documents": PASSAGES, "chat_id": "pets"}
    assert check_groundedness(state, deps())["is_grounded"]
    restated = {**state, "answer": "The bridge opened [Source 1]."}
    assert not check_groundedness(restated, deps())["is_grounded"]


def test_an_answer_too_thin_to_check_is_not_grounded(deps):
    update = check_groundedness(
        {"answer": "The answer is: 1932 [Source 1]", "question": OPENED, "relevant_documents": PASSAGES,
         "chat_id": "pets"}, deps()
    )
    assert not update["is_grounded"] and "too short" in update["hallucination_details"]


def test_an_answer_citing_no_source_is_not_grounded(deps):
    # What the bundled model once wrote on a regeneration, echoing the feedback; it passed the overlap check.
    echo = "The sources do not support the answer. The bridge is described in the documents."
    update = check_groundedness({"answer": echo, "question": OPENED, "relevant_documents": PASSAGES,
                                 "chat_id": "pets"}, deps())
    assert not update["is_grounded"] and "cites no source" in update["hallucination_details"]


def test_the_check_notes_when_someone_waits_for_the_model_so_no_regeneration_delays_them(deps):
    d = deps()
    answer = {"answer": "The bridge opened in 1990 and has 12 lanes [Source 1].", "question": OPENED,
              "relevant_documents": PASSAGES, "chat_id": "pets"}
    assert check_groundedness(answer, d)["others_waiting"] is False

    def take_a_turn() -> None:
        with d.llm.scheduler.turn(Waiter(chat_id="waiting")):
            pass

    waiting = threading.Thread(target=take_a_turn)
    with model_busy(d.llm.scheduler):
        waiting.start()
        while d.llm.scheduler.waiting == 0:
            waiting.join(0.01)
        assert check_groundedness(answer, d)["others_waiting"] is True
    waiting.join()


def test_the_evidence_is_sent_before_the_model_is_asked(deps):
    update = present_evidence({"question": "How long is the arch?", "relevant_documents": PASSAGES, "chat_id": "pets"}, deps())
    assert "503 metres" in update["evidence"] and "[Source 2]" in update["evidence"]
    assert update["evidence_documents"] == PASSAGES


def test_the_evidence_always_quotes_the_sentence_found_to_answer(deps):
    many = [passage(0, "The bridge is famous for its grand steel arch. The bridge is a much-loved landmark of the "
                       "city. Tourists have climbed the famous bridge every day since 1998. Paint crews use 30,000 "
                       "litres of grey paint on it.", "bridge.pdf")]
    state = {"question": "Why is the bridge famous?", "relevant_documents": many, "chat_id": "pets"}
    assert "30,000 litres" not in present_evidence(state, deps())["evidence"]
    answering = "Paint crews use 30,000 litres of grey paint on it."
    assert "30,000 litres" in present_evidence({**state, "answer_sentence": answering}, deps())["evidence"]


def test_the_evidence_answer_says_when_the_model_was_too_busy(deps):
    state = {"question": "How long is the arch?", "relevant_documents": PASSAGES, "model_busy": True}
    update = answer_extractively(state, deps())
    assert update["evidence_reason"] == "busy" and update["answer"].startswith(BUSY_EVIDENCE_PREFIX)
    assert "503 metres" in update["answer"]


def test_the_extractive_answer_quotes_the_closest_sentences(deps):
    update = answer_extractively({"question": "How long is the arch?", "relevant_documents": PASSAGES, "chat_id": "pets"}, deps())
    assert update["answer_kind"] == "extractive" and "503 metres" in update["answer"]
    assert "[Source 2]" in update["answer"] and update["sources"][0]["filename"] == "bridge.pdf"
    assert update["evidence_reason"] == "unsupported" and update["answer"].startswith(EXTRACTIVE_PREFIX)


def test_the_extractive_answer_quotes_a_sentence_once_even_when_passages_overlap(deps):
    overlapping = [
        passage(0, "Workers were paid $9 per hour for the article. The task was reviewed", "paper.pdf", 4, "p"),
        passage(1, "The task was reviewed favorably by crowdworkers. Workers were paid $9 per hour for the article.",
                "paper.pdf", 4, "p"),
    ]
    answer = answer_extractively({"question": "How much were workers paid?", "relevant_documents": overlapping},
                                 deps())["answer"]
    assert answer.count("paid $9 per hour") == 1
    assert answer.count("The task was reviewed") == 1


def test_the_extractive_answer_never_quotes_a_sentence_cut_off_at_the_end_of_a_passage(deps):
    cut = [passage(0, "Workers were paid $9 per hour. Workers were recommended a speed of five questions per", "p.pdf")]
    answer = answer_extractively({"question": "What speed were workers recommended?", "relevant_documents": cut},
                                 deps())["answer"]
    assert "five questions per" not in answer and "paid $9 per hour" in answer


def test_remember_saves_the_exchange_with_its_metadata(deps):
    d = deps()
    source = {"filename": "care.txt", "document_id": d.documents.list("pets")[0].document_id}
    remember({"session_id": "s9", "chat_id": "pets", "question": "q?", "answer": "a [Source 1].",
              "sources": [source], "is_grounded": False, "detected_intent": "question",
              "answer_kind": "generated", "iteration": 2}, d)
    user, assistant = d.memory.history("s9")
    assert (user.content, assistant.content) == ("q?", "a [Source 1].")
    assert assistant.metadata["is_grounded"] is False and assistant.metadata["iterations"] == 2


def test_the_reply_for_sources_removed_mid_answer_names_them_in_the_plural_when_there_are_several():
    sources = [{"document_id": "d1", "filename": "a.pdf"}, {"document_id": "d2", "filename": "b.pdf"},
               {"document_id": "d3", "filename": "c.pdf"}]
    several = reply_sources_removed_mid_answer(sources, {"d1", "d2"})
    assert several["answer"].startswith("“a.pdf” and “b.pdf”, which this answer was drawn from, were removed from")
    assert several["answer_synthesized"] is False and several["sources"] == []
    assert several["evidence_reason"] is None
    one = reply_sources_removed_mid_answer(sources, {"d3"})
    assert one["answer"].startswith("“c.pdf”, which this answer was drawn from, was removed from")

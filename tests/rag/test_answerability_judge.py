"""Who decides answerability (AXIOM_ANSWERABILITY_JUDGE): the parser of the model's reply, the node in each mode
and its fallbacks to the evidence rules, and the graph when the judge found the model busy. Real container,
stores and embedder; the language model is scripted (the 135M model cannot be made to judge either way on
demand) except where a real server that is down is the point."""


import pytest
from pydantic import ValidationError

from backend.config import Settings
from backend.llm.openai_compat import OpenAICompatLLM
from backend.rag.answerability_model import parse_answerable
from backend.rag.nodes.answerability import judge_answerability
from backend.rag.prompts import BUSY_EVIDENCE_PREFIX, NOT_ANSWERED_REPLY
from tests.llm.support import free_port
from tests.llm.test_ollama import ollama_at, stand_in  # noqa: F401 (stand_in is a fixture)
from tests.rag.scripted import ScriptedLLM
from tests.rag.test_graph import CARE, GROUNDED, ask, stopped_once_queued
from tests.rag.test_nodes import PASSAGES
from tests.support.model_queue import model_busy

# The rules answer the first (a sentence holds a date and the key terms) and not the second (no name is given).
OPENED = {"question": "When did the bridge open?", "relevant_documents": PASSAGES[:2], "chat_id": "c"}
BUILT = {"question": "Who built the bridge?", "relevant_documents": PASSAGES[:2], "chat_id": "c"}


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("ANSWERABLE: YES", True),
        ("answerable: no", False),
        ("ANSWERABLE:NO.", False),
        ("**ANSWERABLE:** **YES**\nSource 1 gives the year.", True),
        ("Answerable - yes, [Source 1] states it", True),
        ('{"answerable": false, "reason": "no source names the builder"}', False),
        ('```json\n{"answerable": true}\n```', True),
        ('{"answerable":false}', False),
        ("{'answerable': True}", True),
        ("Yes.", True),
        ("NO", False),
        ("No, the sources only describe the bridge.", False),
        ("Not answerable.", False),
        ("The question is unanswerable from these sources.", False),
        ("The sources do not answer the question.", False),
        ("This cannot be answered from the passages.", False),
        ("The sources do not mention who built it.", False),
        ("The passages answer the question: it opened in 1932.", True),
        ("The question is answerable.", True),
        # The prompt's format echoed, then the verdict.
        ("ANSWERABLE: YES or NO\nANSWERABLE: NO", False),
    ],
)
def test_the_verdict_is_read_from_messy_replies(reply, verdict):
    assert parse_answerable(reply) is verdict


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   \n",
        "ANSWERABLE: YES or NO",  # the format echoed, no verdict
        "ANSWERABLE: YES/NO",
        '{"answerable": true} or {"answerable": false}',
        "The answer is: 2",  # the bundled model's reply seen on the dev split
        "The sources used to pre-train BERT are:\n1. Academic_2col_bert (Page 3",
        "I think so",
        "Maybe.",
    ],
)
def test_a_reply_without_a_verdict_is_unreadable(reply):
    assert parse_answerable(reply) is None


@pytest.fixture
def judge_deps(tmp_path, make_services):
    def build(*answers, judge="model", **overrides):
        llm = ScriptedLLM(*answers or ("unused",))
        services = make_services(tmp_path / "data", llm=llm, answerability_judge=judge, **overrides)
        return services.pipeline.deps, llm

    return build


def test_the_evidence_judge_never_asks_the_model(judge_deps):
    deps, llm = judge_deps("ANSWERABLE: YES", judge="evidence")
    assert not judge_answerability(BUILT, deps)["answerable"]
    opened = judge_answerability(OPENED, deps)
    assert opened["answerable"] and opened["processing_steps"][0].endswith("; judged by evidence)")
    assert llm.prompts == []


def test_the_model_judge_decides_either_way_from_the_closest_passages(judge_deps):
    deps, llm = judge_deps("ANSWERABLE: YES", "ANSWERABLE: NO")
    built = judge_answerability(BUILT, deps)  # the rules say no; the model's yes stands
    assert built["answerable"] and built["answer_sentence"] is None
    assert built["processing_steps"][0].endswith("; judged by model)") and "model_busy" not in built
    prompt = llm.prompts[0][-1]["content"]
    assert "QUESTION: Who built the bridge?" in prompt and "opened in 1932" in prompt and "503 metres" in prompt
    opened = judge_answerability(OPENED, deps)  # the rules say yes; the model's no stands
    assert not opened["answerable"] and opened["answer_sentence"] is None
    assert opened["processing_steps"][0].startswith("answerable:no") and len(llm.prompts) == 2


def test_both_asks_the_model_only_when_the_rules_find_no_answer(judge_deps):
    deps, llm = judge_deps("ANSWERABLE: YES", judge="both")
    opened = judge_answerability(OPENED, deps)
    assert opened["answerable"] and "1932" in opened["answer_sentence"] and llm.prompts == []
    assert opened["processing_steps"][0].endswith("; judged by evidence)")
    built = judge_answerability(BUILT, deps)
    assert built["answerable"] and built["processing_steps"][0].endswith("; judged by model)")
    assert len(llm.prompts) == 1


def test_an_unreadable_reply_leaves_the_decision_to_the_rules(judge_deps):
    deps, _ = judge_deps("The answer is: 2")
    built = judge_answerability(BUILT, deps)
    assert not built["answerable"] and built["processing_steps"][0].endswith(
        "; judged by evidence, model reply unreadable)")
    assert judge_answerability(OPENED, deps)["answerable"]


def test_a_model_too_busy_for_the_answers_patience_leaves_the_decision_to_the_rules(judge_deps):
    deps, llm = judge_deps("ANSWERABLE: NO", llm_queue_patience_seconds=0)
    with model_busy(deps.llm.scheduler):
        opened = judge_answerability(OPENED, deps)
    assert opened["answerable"] and opened["model_busy"] and llm.prompts == []
    assert opened["processing_steps"][0].endswith("; judged by evidence, model busy)")


def test_a_server_that_is_down_leaves_the_decision_to_the_rules(tmp_path, make_services):
    down = OpenAICompatLLM(f"http://127.0.0.1:{free_port()}/v1", "any", api_key=None, context_window=2048,
                           timeout=5.0)
    deps = make_services(tmp_path / "data", llm=down, answerability_judge="model").pipeline.deps
    opened = judge_answerability(OPENED, deps)
    assert opened["answerable"] and "model_busy" not in opened
    assert opened["processing_steps"][0].endswith("; judged by evidence, model unavailable)")


def test_a_server_that_refuses_the_request_leaves_the_decision_to_the_rules(
    tmp_path, make_services, stand_in  # noqa: F811 (the fixture imported above)
):
    # A stand-in Ollama server (Ollama cannot run here) refusing the judge's request, as a server that takes no
    # JSON schema does: the rules decide, the asker gets no error.
    stand_in.script.error = (400, "format is not supported")
    deps = make_services(tmp_path / "data", llm=ollama_at(stand_in.url), answerability_judge="model").pipeline.deps
    opened = judge_answerability(OPENED, deps)
    assert opened["answerable"] and "model_busy" not in opened and stand_in.requests
    assert opened["processing_steps"][0].endswith("; judged by evidence, model failed)")


def test_the_model_judges_in_the_graph_and_a_busy_model_gets_the_evidence_answer_at_once(tmp_path, make_services):
    llm = ScriptedLLM("ANSWERABLE: NO", GROUNDED)
    services = make_services(tmp_path / "data", llm=llm, answerability_judge="model")
    services.ingestion.ingest("pets", "care.txt", CARE.encode())
    refused, _ = ask(services, "What water temperature do axolotls need?")  # the rules would answer it
    assert refused.answer.startswith(NOT_ANSWERED_REPLY) and refused.answer_kind == "not_found"
    assert len(llm.prompts) == 1

    busy = make_services(tmp_path / "busy", llm=ScriptedLLM("ANSWERABLE: NO"), answerability_judge="model",
                         llm_queue_patience_seconds=0)
    busy.ingestion.ingest("pets", "care.txt", CARE.encode())
    with model_busy(busy.llm.scheduler):
        result, _ = ask(busy, "What water temperature do axolotls need?")
    # The rules decided and the written answer did not wait a second time.
    assert result.answer_kind == "extractive" and result.evidence_reason == "busy"
    assert result.answer.startswith(BUSY_EVIDENCE_PREFIX) and "16 and 18 degrees" in result.answer
    assert not any(step.startswith("generate") for step in result.processing_steps)


def test_a_question_waiting_for_the_judge_is_told_its_place_and_stop_takes_it_out(tmp_path, make_services):
    llm = ScriptedLLM("ANSWERABLE: YES", GROUNDED)
    services = make_services(tmp_path / "data", llm=llm, answerability_judge="model")
    services.ingestion.ingest("pets", "care.txt", CARE.encode())
    events = stopped_once_queued(services)  # Stop, while the judge waits for the model
    stages = [e["stage"] for e in events if e["type"] == "status"]
    assert stages[-2:] == ["judging", "queued"] and "result" not in [e["type"] for e in events]
    assert llm.prompts == [] and services.memory.history("s1") == []


def test_the_judge_is_a_setting_the_container_hands_to_the_graph(tmp_path, make_services, monkeypatch):
    assert Settings(_env_file=None).answerability_judge == "evidence"
    monkeypatch.setenv("AXIOM_ANSWERABILITY_JUDGE", "both")
    assert Settings(_env_file=None).answerability_judge == "both"
    monkeypatch.setenv("AXIOM_ANSWERABILITY_JUDGE", "llm")
    with pytest.raises(ValidationError, match="answerability_judge"):
        Settings(_env_file=None)
    monkeypatch.delenv("AXIOM_ANSWERABILITY_JUDGE")
    services = make_services(tmp_path / "data", llm=ScriptedLLM("unused"), answerability_judge="model")
    assert services.pipeline.deps.answerability_judge == "model"

"""The RAG graph: the whole topology, declared in one block. Node logic lives in backend/rag/nodes/."""

from __future__ import annotations

from functools import partial
from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from backend.rag.deps import RAGDeps
from backend.rag.intent import NEEDS_PREVIOUS_ANSWER, Intent
from backend.rag.nodes.answerability import judge_answerability
from backend.rag.nodes.evidence import present_evidence
from backend.rag.nodes.generate import generate
from backend.rag.nodes.grade import grade_documents
from backend.rag.nodes.groundedness import answer_extractively, check_groundedness
from backend.rag.nodes.handlers import reply_fixed, reply_not_found, transform_previous
from backend.rag.nodes.intent import classify_intent
from backend.rag.nodes.remember import remember
from backend.rag.nodes.retrieve import gather_for_summary, retrieve
from backend.rag.nodes.rewrite import rewrite_query
from backend.rag.nodes.route import classify_complexity
from backend.rag.state import RAGState

_NO_RAG = {Intent.GREETING, Intent.GRATITUDE, Intent.GARBAGE, Intent.OFF_TOPIC, Intent.CLARIFY_NEEDED}


def route_by_intent(state: RAGState) -> Literal["reply_fixed", "transform_previous", "classify_complexity"]:
    intent = Intent(state["detected_intent"])
    if intent in _NO_RAG:
        return "reply_fixed"
    has_previous_answer = any(m["role"] == "assistant" for m in state.get("history", []))
    if intent in NEEDS_PREVIOUS_ANSWER and has_previous_answer:
        return "transform_previous"
    return "classify_complexity"  # questions, commands, and follow-ups with nothing to follow


def route_by_complexity(state: RAGState) -> Literal["rewrite_query", "retrieve", "gather_for_summary"]:
    if state["is_summarization"]:
        return "gather_for_summary"
    return "retrieve" if state["skip_rewrite"] else "rewrite_query"


def route_after_grade(state: RAGState) -> Literal["judge_answerability", "reply_not_found"]:
    return "judge_answerability" if state.get("relevant_documents") else "reply_not_found"


def route_by_answerability(state: RAGState) -> Literal["present_evidence", "reply_not_found"]:
    # On topic but not answering: no quotes are shown as if they answered, and the model is not asked.
    return "present_evidence" if state["answerable"] else "reply_not_found"


def route_after_evidence(state: RAGState) -> Literal["generate", "answer_extractively"]:
    # The answerability judge found the model too busy: the written answer would wait as long again.
    return "answer_extractively" if state.get("model_busy") else "generate"


def route_after_gather(state: RAGState) -> Literal["generate", "reply_not_found"]:
    # A summary has no evidence to show first: its passages may be the model's partial summaries, not quotes.
    return "generate" if state.get("relevant_documents") else "reply_not_found"


def route_after_generate(state: RAGState) -> Literal["check_groundedness", "answer_extractively"]:
    return "answer_extractively" if state.get("model_busy") else "check_groundedness"


def route_after_check(
    state: RAGState, max_retries: int
) -> Literal["remember", "generate", "answer_extractively"]:
    if state["is_grounded"]:
        return "remember"
    may_retry = state["iteration"] <= max_retries and not state.get("others_waiting", False)
    return "generate" if may_retry else "answer_extractively"


def build_graph(deps: RAGDeps) -> CompiledStateGraph:
    def node(function):
        return partial(function, deps=deps)

    graph = StateGraph(RAGState)
    graph.add_node("classify_intent", node(classify_intent))
    graph.add_node("reply_fixed", node(reply_fixed))
    graph.add_node("transform_previous", node(transform_previous))
    graph.add_node("classify_complexity", node(classify_complexity))
    graph.add_node("rewrite_query", node(rewrite_query))
    graph.add_node("retrieve", node(retrieve))
    graph.add_node("gather_for_summary", node(gather_for_summary))
    graph.add_node("grade_documents", node(grade_documents))
    graph.add_node("judge_answerability", node(judge_answerability))
    graph.add_node("reply_not_found", node(reply_not_found))
    graph.add_node("present_evidence", node(present_evidence))
    graph.add_node("generate", node(generate))
    graph.add_node("check_groundedness", node(check_groundedness))
    graph.add_node("answer_extractively", node(answer_extractively))
    graph.add_node("remember", node(remember))

    graph.add_edge(START, "classify_intent")
    graph.add_conditional_edges("classify_intent", route_by_intent)
    graph.add_conditional_edges("classify_complexity", route_by_complexity)
    graph.add_edge("rewrite_query", "retrieve")
    graph.add_edge("retrieve", "grade_documents")
    graph.add_conditional_edges("grade_documents", route_after_grade)
    graph.add_conditional_edges("judge_answerability", route_by_answerability)
    graph.add_conditional_edges("gather_for_summary", route_after_gather)
    graph.add_conditional_edges("present_evidence", route_after_evidence)
    graph.add_conditional_edges("generate", route_after_generate)
    graph.add_conditional_edges(
        "check_groundedness", partial(route_after_check, max_retries=deps.limits.max_retries),
        ["remember", "generate", "answer_extractively"],
    )
    graph.add_edge("answer_extractively", "remember")
    graph.add_edge("reply_fixed", "remember")
    graph.add_edge("transform_previous", "remember")
    graph.add_edge("reply_not_found", "remember")
    graph.add_edge("remember", END)
    return graph.compile()

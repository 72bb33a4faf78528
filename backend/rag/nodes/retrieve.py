"""Retrieval for questions (hybrid search + parent expansion, with the rewrite as a second query) and for
summaries (every parent of the chat in page order, map-reduced when it does not fit the context budget)."""

from __future__ import annotations

from backend.llm.base import GenerationParams
from backend.llm.scheduler import ModelBusy
from backend.models import Chunk, Parent, Passage
from backend.rag.deps import RAGDeps
from backend.rag.nodes.events import model_waiter, status
from backend.rag.prompts import MAP_SUMMARY_PROMPT
from backend.rag.state import RAGState
from backend.retrieval.fusion import reciprocal_rank_fusion


def retrieve(state: RAGState, deps: RAGDeps) -> RAGState:
    if not deps.documents.list(state["chat_id"]):
        return {"collection_empty": True, "retrieved_documents": [], "processing_steps": ["retrieve:empty"]}
    status("retrieving", "Searching your documents…")
    queries = [state["question"]] + ([state["rewritten_query"]] if state.get("rewritten_query") else [])
    rankings, failed = [], []
    for query in queries:
        ranked, query_failed = deps.retriever.fused(state["chat_id"], query)
        rankings.append(ranked)
        failed += query_failed
    # Multi-query: the original and the rewrite each vote by rank, so a poor rewrite cannot crowd out the original.
    fused = rankings[0] if len(rankings) == 1 else reciprocal_rank_fusion(rankings)
    passages = deps.retriever.expand(fused[: deps.retriever.depths.initial_k])
    return {
        "collection_empty": False,
        "retrieved_documents": passages,
        "errors": [f"{name} retrieval failed; used the other retriever" for name in sorted(set(failed))],
        "processing_steps": [f"retrieve:{len(passages)} passages from {len(queries)} queries"],
    }


def _as_passage(parent: Parent) -> Passage:
    head = Chunk(f"{parent.parent_id}-head", parent.parent_id, parent.document_id, parent.filename, parent.page,
                 parent.text[:400])
    return Passage(parent, head, 1.0, (head,))


def gather_for_summary(state: RAGState, deps: RAGDeps) -> RAGState:
    parents = deps.documents.chat_parents(state["chat_id"])
    if not parents:
        return {"collection_empty": True, "relevant_documents": [], "processing_steps": ["summarize:empty"]}
    status("retrieving", "Reading your documents…")
    budget = deps.limits.context_budget_tokens
    count = deps.llm.count_tokens
    if sum(count(p.text) for p in parents) <= budget:
        passages = [_as_passage(p) for p in parents]
        return {"collection_empty": False, "relevant_documents": passages, "retrieved_documents": passages,
                "processing_steps": [f"summarize:{len(parents)} parents fit"]}

    # Map step: partial summaries of consecutive groups of parents, each group filling the budget. Past the
    # allowed number of map calls the groups are spread evenly over the documents, so the summary still covers
    # the beginning, middle and end rather than only the first pages.
    groups: list[list[Parent]] = [[]]
    used = 0
    for parent in parents:
        cost = count(parent.text)
        if groups[-1] and used + cost > budget:
            groups.append([])
            used = 0
        groups[-1].append(parent)
        used += cost
    calls = deps.limits.summary_map_calls
    if len(groups) > calls:
        step = len(groups) / calls
        groups = [groups[int(i * step)] for i in range(calls)]
    summaries = []
    for index, group in enumerate(groups, start=1):
        status("summarizing", f"Summarising part {index} of {len(groups)}…")
        text = "\n\n".join(p.text for p in group)
        while count(text) > budget:  # a single parent can exceed a small budget
            text = text[: int(len(text) * 0.8)]
        waiter = model_waiter(state["chat_id"], deps.limits.queue_patience_seconds)
        try:
            summary = deps.llm.complete([{"role": "user", "content": MAP_SUMMARY_PROMPT.format(context=text)}],
                                        GenerationParams(max_tokens=160), waiter=waiter)
        except ModelBusy:
            # The document's own opening passages of each part, instead of summaries nobody has time to write.
            passages = [_as_passage(g[0]) for g in groups]
            return {"collection_empty": False, "relevant_documents": passages, "retrieved_documents": passages,
                    "processing_steps": ["summarize:model busy, first passage of each part"]}
        first = group[0]
        summaries.append(_as_passage(Parent(f"{first.parent_id}-summary", first.document_id, first.filename,
                                            first.page, summary.strip(), label=first.label)))
    return {"collection_empty": False, "relevant_documents": summaries, "retrieved_documents": summaries,
            "processing_steps": [f"summarize:map-reduce over {len(groups)} of {len(parents)} parents"]}

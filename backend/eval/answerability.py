"""`axiom eval answerability`: does Axiom say "not in your documents" when the passages are on topic but do not
answer, and still answer when they do?

The labelled set is bench/data/answerability.jsonl (how it was written: bench/data/answerability.md). Its PDFs are
ingested into one chat, its SciFact abstracts with ``distractors`` other abstracts of the corpus into another (and
its NFCorpus abstracts likewise into a third), by the real ingestion; each question then goes through the real
retrieval and grading and the same answerability decision as the graph's: by the evidence rules alone unless
``--judge`` names the model (the default decision must not depend on it). A question counts as answered when its
passages pass grading and the decision finds it answered, as not found otherwise.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from backend.container import Services
from backend.embeddings import Embedder
from backend.eval.beir import load_beir
from backend.eval.metrics import percentile
from backend.models import Passage
from backend.rag.answerability import AnswerabilityPolicy, Similarity, closest_passages, judge, similarity_to
from backend.rag.answerability_judge import AnswerabilityJudge, decide
from backend.rag.answerability_model import ANSWERABILITY_PARAMS, answerability_messages

# The model's raw reply to the answerability prompt for a question and its kept passages (``--judge model``).
AskModel = Callable[[str, Sequence[Passage]], str]

CORPORA = ("pdfs", "scifact", "nfcorpus")
# The BEIR corpora whose abstracts are asked about: the chat's name → its folder in the shared data.
_BEIR_FOLDERS = {"scifact": "beir-scifact", "nfcorpus": "beir-nfcorpus"}


@dataclass(frozen=True)
class LabelledQuestion:
    id: str
    split: str  # "dev" and "test2" to choose parameters on, "test" and "test3" to report
    corpus: str  # "pdfs" | "scifact" | "nfcorpus": also the chat it is asked in
    document: str  # a PDF file name, or a SciFact / NFCorpus corpus id
    question: str
    answerable: bool


@dataclass(frozen=True)
class Retrieved:
    question: LabelledQuestion
    graded: tuple[Passage, ...]  # what passed the fixed relevance threshold, best first


@dataclass(frozen=True)
class Outcome:
    id: str
    answerable: bool
    said_answered: bool
    graded: int
    kept: int
    coverage: float
    answer_type: str
    ms: float  # the decision's time: the per-query threshold and the sentences' test (and the model's reply)
    judged_by: str = "evidence"  # who decided, and why the rules did when the model was asked


@dataclass(frozen=True)
class AnswerabilityReport:
    split: str
    policy: dict
    answerable: int
    answered: float  # share of the answerable questions answered
    unanswerable: int
    honest_not_found: float  # share of the unanswerable questions that got "not in your documents"
    mean_graded: float  # passages passing the fixed threshold, per question
    mean_kept: float  # passages kept by the per-query threshold, per question
    p50_ms: float  # the decision's time per question (sentence embeddings may come from the cache)
    by_corpus: dict[str, dict[str, float]]
    misjudged: list[Outcome]
    judged_by: dict[str, int]  # questions per judge ("model", "evidence", "evidence, model reply unreadable", …)

    def as_dict(self) -> dict:
        return asdict(self)

    def table(self) -> str:
        lines = [
            f"split {self.split}; policy {self.policy}",
            f"answered on answerable:           {self.answered:.3f} of {self.answerable}",
            f"honest not-found on unanswerable: {self.honest_not_found:.3f} of {self.unanswerable}",
            f"passages per question: {self.mean_graded:.2f} pass the fixed threshold, {self.mean_kept:.2f} the per-query one",
            f"decision time: {self.p50_ms:.1f} ms p50",
            "judged by: " + ", ".join(f"{judge} {count}" for judge, count in self.judged_by.items()),
        ]
        lines += [f"  {corpus:<8} answered {s['answered']:.3f}  not-found {s['honest_not_found']:.3f}"
                  for corpus, s in self.by_corpus.items()]
        lines += ["misjudged:"] + [
            f"  {o.id} {'answerable' if o.answerable else 'unanswerable'} said "
            f"{'answered' if o.said_answered else 'not found'} ({o.answer_type}, coverage {o.coverage:.2f})"
            for o in self.misjudged
        ]
        return "\n".join(lines)


def load_questions(path: Path) -> list[LabelledQuestion]:
    with path.open() as lines:
        return [
            LabelledQuestion(r["id"], r["split"], r["corpus"], r["document"], r["question"], r["answerable"])
            for r in map(json.loads, lines)
        ]


def ingest_corpora(
    services: Services, questions: Sequence[LabelledQuestion], shared_data: Path, distractors: int
) -> None:
    """The PDFs into the chat "pdfs"; each BEIR corpus's abstracts asked about, and ``distractors`` more, into the
    chat named after the corpus ("scifact", "nfcorpus")."""
    for filename in sorted({q.document for q in questions if q.corpus == "pdfs"}):
        services.ingestion.ingest("pdfs", filename, (shared_data / "pdfs" / filename).read_bytes())
    for chat, folder in _BEIR_FOLDERS.items():
        asked = {q.document for q in questions if q.corpus == chat}
        if not asked:
            continue
        corpus = load_beir(shared_data / folder).corpus
        others = [doc_id for doc_id in corpus if doc_id not in asked][:distractors]
        for doc_id in sorted(asked) + others:
            services.ingestion.ingest(chat, f"{chat}-{doc_id}.txt", corpus[doc_id].encode())


def retrieve_all(services: Services, questions: Iterable[LabelledQuestion]) -> list[Retrieved]:
    return [Retrieved(q, tuple(services.retriever.retrieve(q.corpus, q.question).relevant)) for q in questions]


def judge_one(
    retrieved: Retrieved, policy: AnswerabilityPolicy, similarity: Similarity,
    judge_mode: AnswerabilityJudge = "evidence", ask_model: AskModel | None = None,
) -> Outcome:
    """The graph's decision for one question: nothing graded (the model is not asked then), or no answer found by
    ``judge_mode``, is "not found"."""
    started = time.perf_counter()
    question = retrieved.question
    kept = closest_passages(retrieved.graded, policy.relevance_margin)
    verdict = judge(question.question, kept, policy, similarity)
    mode = judge_mode if kept and ask_model is not None else "evidence"
    decision = decide(mode, verdict, lambda: ask_model(question.question, kept))
    ms = (time.perf_counter() - started) * 1000
    return Outcome(question.id, question.answerable, bool(kept) and decision.answerable, len(retrieved.graded),
                   len(kept), verdict.coverage, verdict.answer_type, ms, decision.describe())


def model_asker(services: Services) -> AskModel:
    """Asks the configured model, as the graph's judge does (through the scheduler, waiting as long as it takes)."""
    budget = services.pipeline.deps.limits.context_budget_tokens

    def ask(question: str, passages: Sequence[Passage]) -> str:
        messages = answerability_messages(question, passages, services.llm.count_tokens, budget)
        return services.llm.complete(messages, ANSWERABILITY_PARAMS)

    return ask


def score(
    retrieved: Sequence[Retrieved], policy: AnswerabilityPolicy, split: str, embedder: Embedder,
    judge_mode: AnswerabilityJudge = "evidence", ask_model: AskModel | None = None,
) -> AnswerabilityReport:
    outcomes = [judge_one(r, policy, similarity_to(r.question.question, embedder), judge_mode, ask_model)
                for r in retrieved]
    by_corpus = {
        corpus: _shares([o for o, r in zip(outcomes, retrieved) if r.question.corpus == corpus])
        for corpus in CORPORA
        if any(r.question.corpus == corpus for r in retrieved)
    }
    shares = _shares(outcomes)
    return AnswerabilityReport(
        split=split,
        policy=asdict(policy),
        answerable=sum(o.answerable for o in outcomes),
        answered=shares["answered"],
        unanswerable=sum(not o.answerable for o in outcomes),
        honest_not_found=shares["honest_not_found"],
        mean_graded=_mean([o.graded for o in outcomes]),
        mean_kept=_mean([o.kept for o in outcomes]),
        p50_ms=percentile([o.ms for o in outcomes], 50),
        by_corpus=by_corpus,
        misjudged=[o for o in outcomes if o.said_answered != o.answerable],
        judged_by=dict(Counter(o.judged_by for o in outcomes)),
    )


def sweep(
    retrieved: Sequence[Retrieved], policies: Iterable[AnswerabilityPolicy], embedder: Embedder
) -> list[tuple[AnswerabilityPolicy, float, float]]:
    """(policy, answered, honest not-found) for each policy: for choosing on dev. Each question's similarities are
    computed once for the whole sweep."""
    similarities = [_remembered(similarity_to(r.question.question, embedder)) for r in retrieved]
    rows = []
    for policy in policies:
        shares = _shares([judge_one(r, policy, similar) for r, similar in zip(retrieved, similarities)])
        rows.append((policy, shares["answered"], shares["honest_not_found"]))
    return rows


def _remembered(similarity: Similarity) -> Similarity:
    known: dict[str, float] = {}

    def remembered(sentences: Sequence[str]) -> list[float]:
        new = [s for s in dict.fromkeys(sentences) if s not in known]
        known.update(zip(new, similarity(new)))
        return [known[s] for s in sentences]

    return remembered


def run_answerability_eval(
    services: Services,
    questions_path: Path,
    shared_data: Path,
    *,
    split: str,
    policy: AnswerabilityPolicy,
    distractors: int,
    log: Callable[[str], None],
    judge_mode: AnswerabilityJudge = "evidence",
    limit: int | None = None,
) -> tuple[AnswerabilityReport, list[Retrieved]]:
    """``judge_mode`` other than "evidence" asks the configured model as the graph would; ``limit`` takes the split's
    first questions only (in the file's order), for a slow model."""
    questions = [q for q in load_questions(questions_path) if split in ("all", q.split)][:limit]
    log(f"ingesting the documents of {len(questions)} questions…")
    ingest_corpora(services, questions, shared_data, distractors)
    log("retrieving…")
    retrieved = retrieve_all(services, questions)
    log(f"judging ({judge_mode})…")
    ask_model = model_asker(services) if judge_mode != "evidence" else None
    return score(retrieved, policy, split, services.embedder, judge_mode, ask_model), retrieved


def _shares(outcomes: Sequence[Outcome]) -> dict[str, float]:
    answerable = [o for o in outcomes if o.answerable]
    unanswerable = [o for o in outcomes if not o.answerable]
    return {
        "answered": _mean([o.said_answered for o in answerable]),
        "honest_not_found": _mean([not o.said_answered for o in unanswerable]),
    }


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def sweep_policies() -> list[AnswerabilityPolicy]:
    """The grid `--sweep` scores: coverage × similarity × margin at the chosen weights, then the weights of
    the sentence before and of the title at the chosen thresholds. A similarity above 1 switches the meaning
    test off."""
    chosen = AnswerabilityPolicy()
    thresholds = [
        AnswerabilityPolicy(coverage, similarity, margin)
        for margin in (0.1, 0.15, 0.2, 1.0)
        for similarity in (0.6, 0.65, 0.7, 0.75, 1.01)
        for coverage in (0.6, 0.7, 0.75, 0.8, 0.9)
    ]
    weights = [
        AnswerabilityPolicy(context_weight=context, title_weight=title)
        for context in (0.5, 0.75, 1.0)
        for title in (0.0, 0.25, 0.5, 0.75, 1.0)
        if (context, title) != (chosen.context_weight, chosen.title_weight)
    ]
    return thresholds + weights

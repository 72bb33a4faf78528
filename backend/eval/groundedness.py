"""`axiom eval groundedness`: the groundedness checker scored on HaluEval QA and on labelled answers written
by the bundled model.

Each HaluEval QA record (knowledge, question, right_answer, hallucinated_answer) gives two labelled pairs:
the knowledge with the right answer (grounded) and with the hallucinated answer (not grounded). The checker
sees the answer, the knowledge as its one source and the question, as in the pipeline it sees the answer, the
cited sources and the user's question. Every right answer in HaluEval QA is a short span copied from the
knowledge, so the answers are also scored in two longer forms that carry the question's own words, as real
answers restating a question do:
  prefixed   "<question without its ?>: <answer>"
  restated   the question turned into a statement with a fixed rule (``restate_as_sentence``), then the answer
Records are split in half: parameters are chosen on the first (1-250 of the shared file), reported on the second.

Two precisions are reported. ``precision``/``recall``/``f1`` take positive = flagged NOT grounded
(hallucination detection, as before). ``grounded_precision`` is the share of answers called grounded that are
really grounded: how far a "checked" mark can be trusted.

A labelled-answers file (``load_labelled_answers``) holds answers the bundled model wrote through the real
pipeline over shared PDFs, each with its question, the sources it was checked against and a label given by
reading those sources (bench/data/grounding_answers.jsonl, made by bench/grounding_answers.py).
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, NamedTuple

from backend.rag.grounding import GroundednessChecker
from backend.rag.question_terms import question_form

AnswerForm = Literal["given", "prefixed", "restated"]
FORM_TITLES: dict[AnswerForm, str] = {
    "given": "answers as given",
    "prefixed": "answers prefixed by their question",
    "restated": "question restated as a sentence + answer",
}


class LabelledAnswer(NamedTuple):
    sources: tuple[str, ...]
    answer: str
    label_grounded: bool
    question: str | None = None


@dataclass(frozen=True)
class GroundednessReport:
    precision: float
    recall: float
    f1: float
    grounded_precision: float
    accuracy: float
    ms_per_check: float
    max_ms_per_check: float
    n: int
    per_method_counts: dict[str, int]
    per_method_accuracy: dict[str, float]

    def as_dict(self) -> dict:
        return {"positive": "flagged not grounded", **asdict(self)}

    def table(self) -> str:
        lines = [
            f"{self.n} answers; positive = flagged NOT grounded; P(grounded) = share called grounded that are",
            f"{'precision':>10}{'recall':>8}{'F1':>8}{'P(grounded)':>13}{'accuracy':>10}{'ms/check':>10}{'max ms':>8}",
            (
                f"{self.precision:>10.4f}{self.recall:>8.4f}{self.f1:>8.4f}{self.grounded_precision:>13.4f}"
                f"{self.accuracy:>10.4f}{self.ms_per_check:>10.3f}{self.max_ms_per_check:>8.1f}"
            ),
            f"{'decided by':<12}{'answers':>8}{'accuracy':>10}",
        ]
        for method, count in sorted(self.per_method_counts.items()):
            lines.append(f"{method:<12}{count:>8}{self.per_method_accuracy[method]:>10.4f}")
        return "\n".join(lines)


_WH_START = re.compile(r"^(?P<wh>what|which|who|whom|where|when|why|how many|how much|how)\b\s*", re.IGNORECASE)
# "What is X?", "Who was X?", "How old is X?": the subject follows the verb.
_WH_COPULA = re.compile(
    r"^(?:what|which|who|whom|how(?!\s+(?:many|much)\b)(?:\s+\w+)?)\s+(?P<verb>is|are|was|were)\s+(?P<rest>.+)",
    re.IGNORECASE,
)
_WH_INSIDE = re.compile(r"\b(?:what|which)\b", re.IGNORECASE)
_WH_ENDING = re.compile(r"\b(?:who|whom|where|when)\s*$", re.IGNORECASE)
_DO_AUXILIARY = re.compile(r"^(?:do|does|did)\s+", re.IGNORECASE)
# How a leading question word becomes the head of a statement: "Who won?" → "The person who won is A".
_LEADS = {"who": "The person who", "whom": "The person whom", "where": "The place where",
          "when": "The time when", "why": "The reason why", "how": "The way",
          "how many": "The number of", "how much": "The amount of"}


def restate_as_sentence(question: str, answer: str) -> str:
    """``question`` as a statement with ``answer`` in the question word's place, by fixed rules, first match:
    "What/Who/How old is X?" → "X is A."; a leading "What/Which X …?" → "The X … is A."; "Who/Where/When/Why/
    How/How many …?" → "The person who / place where / time when / reason why / way / number of … is A."
    ("do/does/did" after the question word dropped); a final "who/where/when" ("… named after who?") → "… A.";
    a question word inside ("… in what city?") → "… in the city A."; a yes/no or choice question without a
    question word ("Are X and Y …?") → "Whether X and Y …: A."."""
    text = " ".join(question.split()).rstrip("?.! ")
    answer = answer.strip().rstrip(".")
    if copula := _WH_COPULA.match(text):
        rest = copula["rest"]
        return f"{rest[0].upper()}{rest[1:]} {copula['verb'].lower()} {answer}."
    if lead := _WH_START.match(text):
        rest = _DO_AUXILIARY.sub("", text[lead.end():])
        return f"{_LEADS.get(lead['wh'].casefold(), 'The')} {rest} is {answer}."
    if ending := _WH_ENDING.search(text):
        return f"{text[:ending.start()]}{answer}."
    if inside := _WH_INSIDE.search(text):
        return f"{text[:inside.start()]}the{text[inside.end():]} {answer}."
    if question_form(text) != "wh":
        return f"Whether {text[0].lower()}{text[1:]}: {answer}."
    return f"{text}: {answer}."


def _shaped(form: AnswerForm, question: str, answer: str) -> str:
    if form == "prefixed":
        return f"{question.strip().rstrip('?').strip()}: {answer}"
    if form == "restated":
        return restate_as_sentence(question, answer)
    return answer


def load_halueval(path: Path, form: AnswerForm = "given") -> list[LabelledAnswer]:
    """Two labelled answers per record of a HaluEval QA file (JSON lines or one JSON array), right answer
    first, each with the record's question and shaped as ``form``."""
    text = path.read_text(encoding="utf-8")
    records = (
        json.loads(text)
        if text.lstrip().startswith("[")
        else [json.loads(line) for line in text.splitlines() if line.strip()]
    )
    pairs = []
    for number, record in enumerate(records, start=1):
        missing = {"knowledge", "question", "right_answer", "hallucinated_answer"} - record.keys()
        if missing:
            raise ValueError(
                f"{path}: record {number} is not HaluEval QA, it lacks {', '.join(sorted(missing))}"
            )
        question, sources = record["question"].strip(), (record["knowledge"],)
        for answer, grounded in ((record["right_answer"], True), (record["hallucinated_answer"], False)):
            pairs.append(LabelledAnswer(sources, _shaped(form, question, answer), grounded, question))
    return pairs


def load_labelled_answers(path: Path) -> list[LabelledAnswer]:
    """The labelled answers of a JSON-lines file with ``question``, ``answer``, ``sources`` (texts) and
    ``label`` ("grounded" or "not grounded") on every line."""
    answers = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        record = json.loads(line)
        if record.get("label") not in ("grounded", "not grounded"):
            raise ValueError(f"{path}: line {number} has no label 'grounded' or 'not grounded'")
        answers.append(LabelledAnswer(
            tuple(record["sources"]), record["answer"], record["label"] == "grounded", record["question"]
        ))
    return answers


def evaluate_groundedness(
    checker: GroundednessChecker, pairs: Sequence[LabelledAnswer]
) -> GroundednessReport:
    flagged_right = flagged_wrong = missed = correct = 0
    per_method: Counter[str] = Counter()
    per_method_correct: Counter[str] = Counter()
    times: list[float] = []
    for sources, answer, label_grounded, question in pairs:
        started = time.perf_counter()
        verdict = checker.check(answer, sources, question=question)
        times.append(time.perf_counter() - started)
        flagged, hallucinated = not verdict.is_grounded, not label_grounded
        flagged_right += flagged and hallucinated
        flagged_wrong += flagged and not hallucinated
        missed += hallucinated and not flagged
        correct += flagged == hallucinated
        per_method[verdict.method] += 1
        per_method_correct[verdict.method] += flagged == hallucinated
    n = len(pairs)
    precision = _share(flagged_right, flagged_right + flagged_wrong)
    recall = _share(flagged_right, flagged_right + missed)
    passed = n - flagged_right - flagged_wrong
    return GroundednessReport(
        precision=precision,
        recall=recall,
        f1=2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        grounded_precision=_share(passed - missed, passed),
        accuracy=_share(correct, n),
        ms_per_check=sum(times) * 1000 / n if n else 0.0,
        max_ms_per_check=max(times, default=0.0) * 1000,
        n=n,
        per_method_counts=dict(per_method),
        per_method_accuracy={
            method: per_method_correct[method] / count for method, count in per_method.items()
        },
    )


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def halueval_reports(checker: GroundednessChecker, path: Path) -> dict[str, GroundednessReport]:
    """Per answer form: records of the first half (parameters chosen there), of the second half, and all."""
    reports = {}
    for form, title in FORM_TITLES.items():
        pairs = load_halueval(path, form)
        half = len(pairs) // 4 * 2  # whole records: two answers each
        records = len(pairs) // 2
        reports[f"{title}, records 1-{half // 2}"] = evaluate_groundedness(checker, pairs[:half])
        reports[f"{title}, records {half // 2 + 1}-{records}"] = evaluate_groundedness(checker, pairs[half:])
        reports[f"{title}, all {records} records"] = evaluate_groundedness(checker, pairs)
    return reports


def run_groundedness_eval(path: Path | None, as_json: bool, labelled: Path | None = None) -> str:
    """The default checker (no LLM verifier) on a HaluEval QA file in its three answer forms and/or on a
    labelled-answers file, as tables or JSON."""
    checker = GroundednessChecker()
    reports = halueval_reports(checker, path) if path else {}
    if labelled:
        reports[f"labelled answers ({labelled.name})"] = evaluate_groundedness(
            checker, load_labelled_answers(labelled)
        )
    if as_json:
        return json.dumps({name: report.as_dict() for name, report in reports.items()}, indent=2)
    return "\n\n".join(f"{name}:\n{report.table()}" for name, report in reports.items())

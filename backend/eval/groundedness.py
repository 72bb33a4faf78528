"""`axiom eval groundedness`: the groundedness checker scored on HaluEval QA.

Each HaluEval QA record (knowledge, question, right_answer, hallucinated_answer) gives two labelled pairs:
the knowledge with the right answer (grounded) and with the hallucinated answer (not grounded). The checker
sees only the answer and the knowledge, as in the pipeline it sees only the answer and the cited sources.
Positive = flagged NOT grounded: precision and recall are those of hallucination detection.

Caveat: every right answer in HaluEval QA is a short span copied from the knowledge, so all of them clear
layer 1 and none tests the in-between decision; tuned on these pairs alone, "flag everything in between" would
win. The second set therefore prefixes both answers of a record with its question ("Who was born first, A or
B: A"): the grounded answers then carry the question's own wording, as real answers restating a question do,
and most of them land in the in-between band. The sentence check was tuned on the first 250 records of both
sets.

Measured on qa_one-turn_data.json (500 records), defaults (layer 1 at 0.3 / 0.8, sentence support 0.8), no
verifier; accuracy on records 1-250 (tuning) / 251-500 (held out), then P / R / F1 / accuracy on all 1000:
  answers as given        0.890 / 0.882   all: P 1.000  R 0.772  F1 0.871  accuracy 0.886   ~2 ms per check
  prefixed by question    0.650 / 0.648   all: P 0.611  R 0.820  F1 0.700  accuracy 0.649   ~2 ms per check
Layer-1 thresholds 0.2-0.4 / 0.7-0.9 move these by under 0.003, so the seed values stay.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple

from backend.rag.grounding import GroundednessChecker


class LabelledAnswer(NamedTuple):
    source_text: str
    answer: str
    label_grounded: bool


@dataclass(frozen=True)
class GroundednessReport:
    precision: float
    recall: float
    f1: float
    accuracy: float
    ms_per_check: float
    n: int
    per_method_counts: dict[str, int]
    per_method_accuracy: dict[str, float]

    def as_dict(self) -> dict:
        return {"positive": "flagged not grounded", **asdict(self)}

    def table(self) -> str:
        lines = [
            f"{self.n} answers; positive = flagged NOT grounded (hallucination detected)",
            f"{'precision':>10}{'recall':>8}{'F1':>8}{'accuracy':>10}{'ms/check':>10}",
            (
                f"{self.precision:>10.4f}{self.recall:>8.4f}{self.f1:>8.4f}{self.accuracy:>10.4f}"
                f"{self.ms_per_check:>10.3f}"
            ),
            f"{'decided by':<12}{'answers':>8}{'accuracy':>10}",
        ]
        for method, count in sorted(self.per_method_counts.items()):
            lines.append(f"{method:<12}{count:>8}{self.per_method_accuracy[method]:>10.4f}")
        return "\n".join(lines)


def load_halueval(path: Path, question_prefixed: bool = False) -> list[LabelledAnswer]:
    """Two labelled answers per record of a HaluEval QA file (JSON lines or one JSON array), right answer
    first. ``question_prefixed`` puts the record's question, as a statement, before both answers."""
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
        prefix = f"{record['question'].strip().rstrip('?').strip()}: " if question_prefixed else ""
        pairs.append(LabelledAnswer(record["knowledge"], prefix + record["right_answer"], True))
        pairs.append(LabelledAnswer(record["knowledge"], prefix + record["hallucinated_answer"], False))
    return pairs


def evaluate_groundedness(
    checker: GroundednessChecker, pairs: Sequence[LabelledAnswer]
) -> GroundednessReport:
    flagged_right = flagged_wrong = missed = correct = 0
    per_method: Counter[str] = Counter()
    per_method_correct: Counter[str] = Counter()
    elapsed = 0.0
    for source_text, answer, label_grounded in pairs:
        started = time.perf_counter()
        verdict = checker.check(answer, [source_text])
        elapsed += time.perf_counter() - started
        flagged, hallucinated = not verdict.is_grounded, not label_grounded
        flagged_right += flagged and hallucinated
        flagged_wrong += flagged and not hallucinated
        missed += hallucinated and not flagged
        correct += flagged == hallucinated
        per_method[verdict.method] += 1
        per_method_correct[verdict.method] += flagged == hallucinated
    precision = flagged_right / (flagged_right + flagged_wrong) if flagged_right + flagged_wrong else 0.0
    recall = flagged_right / (flagged_right + missed) if flagged_right + missed else 0.0
    n = len(pairs)
    return GroundednessReport(
        precision=precision,
        recall=recall,
        f1=2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        accuracy=correct / n if n else 0.0,
        ms_per_check=elapsed * 1000 / n if n else 0.0,
        n=n,
        per_method_counts=dict(per_method),
        per_method_accuracy={
            method: per_method_correct[method] / count for method, count in per_method.items()
        },
    )


def run_groundedness_eval(path: Path, as_json: bool) -> str:
    """The default checker (no LLM verifier) on every pair of a HaluEval QA file, answers as given and
    prefixed by their question, as tables or JSON."""
    checker = GroundednessChecker()
    reports = {
        "answers as given": evaluate_groundedness(checker, load_halueval(path)),
        "answers prefixed by their question": evaluate_groundedness(checker, load_halueval(path, True)),
    }
    if as_json:
        return json.dumps({name: report.as_dict() for name, report in reports.items()}, indent=2)
    return "\n\n".join(f"{name}:\n{report.table()}" for name, report in reports.items())

"""Who decides whether the closest passages answer the question: the evidence rules, the configured model, or both.

- ``evidence`` (the default): the rules of answerability.py alone. The bundled 135M model cannot judge this
  (docs/benchmarks.md, answerability), and the decision may not depend on it.
- ``model``: a capable model reads the passages and replies whether they answer (answerability_model.py).
- ``both``: the rules first; the model is asked only when they find no answer-bearing sentence. A wrong "yes" of
  the rules still meets the model, which writes the answer from the same passages and is told to say "The
  documents do not contain this information" when they do not (generate recognises it: not found); a wrong "no"
  never would. The rules' misses are the weaker side on held-out questions — answerable questions worded apart
  from their answer, answers in tables and scans (test3: 0.267 answered, 0.667 not found) — and are what a model
  reading the passages recovers. A rules' "yes" costs no extra model call.

Whenever the model is asked but cannot decide — too busy for the answer's patience, unreachable, refusing the
request (a server that takes no JSON schema, say), or its reply unreadable — the rules decide instead: never an error for the asker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from backend.errors import SynthesisFailed
from backend.llm.base import LLMUnavailable
from backend.llm.scheduler import ModelBusy
from backend.rag.answerability import Verdict
from backend.rag.answerability_model import parse_answerable

log = logging.getLogger(__name__)

AnswerabilityJudge = Literal["evidence", "model", "both"]


@dataclass(frozen=True)
class Decision:
    answerable: bool
    judged_by: Literal["evidence", "model"]
    fallback: str | None = None  # why the rules decided although the model was asked

    @property
    def model_busy(self) -> bool:
        return self.fallback == "model busy"

    def describe(self) -> str:
        return self.judged_by if self.fallback is None else f"{self.judged_by}, {self.fallback}"


def decide(mode: AnswerabilityJudge, verdict: Verdict, ask_model: Callable[[], str]) -> Decision:
    """``verdict`` is the rules' (answerability.judge) over the closest passages; ``ask_model`` returns the model's
    raw reply to the answerability prompt over the same passages, and may raise ModelBusy, LLMUnavailable or SynthesisFailed (a
    Stop while waiting, TurnCancelled, passes through)."""
    if mode == "evidence" or (mode == "both" and verdict.answerable):
        return Decision(verdict.answerable, "evidence")
    try:
        reply = ask_model()
    except ModelBusy:
        return Decision(verdict.answerable, "evidence", "model busy")
    except LLMUnavailable:
        log.warning("answerability: the model could not be asked; the evidence rules decide", exc_info=True)
        return Decision(verdict.answerable, "evidence", "model unavailable")
    except SynthesisFailed:  # the server answered with an error: it may refuse the schema the judge asks for
        log.warning("answerability: the model refused the request; the evidence rules decide", exc_info=True)
        return Decision(verdict.answerable, "evidence", "model failed")
    answerable = parse_answerable(reply)
    if answerable is None:
        log.warning("answerability: no verdict in the model's reply %r; the evidence rules decide", reply[:200])
        return Decision(verdict.answerable, "evidence", "model reply unreadable")
    return Decision(answerable, "model")

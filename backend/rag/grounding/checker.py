"""The groundedness checker: the steps of the package docstring in order, and the verifier's say on a
paraphrase."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import Stemmer

from backend.rag.grounding.both import both_mismatch, mentions_both
from backend.rag.grounding.claims import Claim, Question, new_part_overlap, parts_to_check, read_question
from backend.rag.grounding.comparison import picks_the_right_option
from backend.rag.grounding.competitors import better_listed_name
from backend.rag.grounding.llm_verdict import LLMVerdict, parse_llm_verdict
from backend.rag.grounding.relations import (
    agent_of_another,
    asked_relations,
    asks_for_a_number,
    head_noun,
    lacks_the_noun,
    names_a_number,
    only_contrasted,
    other_agent,
)
from backend.rag.grounding.sentences import answer_claims, strip_citations
from backend.rag.grounding.support import (
    ANCHOR_AT,
    SUPPORT_AT,
    Place,
    anchor_terms,
    claim_support,
    describe,
    source_places,
)
from backend.rag.text_terms import analyse, english_stemmer

log = logging.getLogger(__name__)

Verifier = Callable[[str, Sequence[str]], str]
Method = Literal["fast", "llm", "claims"]


@dataclass(frozen=True, slots=True)
class GroundednessVerdict:
    is_grounded: bool
    score: float
    fast_score: float
    method: Method
    issues: list[str] = field(default_factory=list)
    unsupported_sentences: list[str] = field(default_factory=list)


class GroundednessChecker:
    """Decides whether an answer is grounded in its sources (see the module docstring for the steps).

    ``verifier`` takes (answer, sources) and returns a capable LLM's raw reply to ``format_check_prompt``;
    leave it None when only a small LLM is configured.
    """

    def __init__(
        self,
        verifier: Verifier | None = None,
        ungrounded_below: float = 0.3,
        support_at: float = SUPPORT_AT,
        anchor_at: float = ANCHOR_AT,
    ) -> None:
        if not all(0 <= share <= 1 for share in (ungrounded_below, support_at, anchor_at)):
            raise ValueError("need ungrounded_below, support_at and anchor_at in [0, 1]")
        self._verifier = verifier
        self._ungrounded_below = ungrounded_below
        self._support_at = support_at
        self._anchor_at = anchor_at

    def check(
        self, answer: str, sources: Sequence[str], question: str | None = None,
        rewritten_question: str | None = None,
    ) -> GroundednessVerdict:
        """``question`` is what the user asked and ``rewritten_question`` its rewrite for retrieval, if any:
        the words of either are given, not new."""
        stemmer = english_stemmer()
        analysed_sources = [analyse(source, stemmer) for source in sources]
        asked = read_question(question, rewritten_question, stemmer)
        parts = parts_to_check(answer_claims(answer, stemmer), asked)
        if parts is None:
            return GroundednessVerdict(
                is_grounded=False, score=0.0, fast_score=0.0, method="claims",
                issues=["the answer only restates the question: it names nothing the question did not"],
            )
        overlap = new_part_overlap(parts, analysed_sources)
        places = source_places(sources, stemmer) if mentions_both(answer, question) else None
        if places and (mismatch := both_mismatch(strip_citations(answer), question, places, stemmer)):
            # The sources may say P in other words ("a genus in the Papaveraceae family" for "a plant").
            if self._verifier is not None and (verdict := self._ask_verifier(answer, sources)) is not None:
                return _verdict_from_llm(verdict, overlap)
            return _rejected(mismatch, overlap)
        if not parts:
            return GroundednessVerdict(is_grounded=True, score=1.0, fast_score=overlap, method="claims")
        source_stems = frozenset().union(*(s.stems for s in analysed_sources))
        if overlap < self._ungrounded_below:
            missing = {t.stem: t.surface for part in parts for t in part.checked if t.stem not in source_stems}
            return GroundednessVerdict(
                is_grounded=False, score=overlap, fast_score=overlap, method="fast",
                issues=[f"most of what the answer adds is not in the sources; missing: {', '.join(missing.values())}"],
            )
        places = places if places is not None else source_places(sources, stemmer)
        if asked.form == "choice" and question:
            right_pick = picks_the_right_option(question, [t for part in parts for t in part.checked], places)
            if right_pick is False:
                return _rejected("the sources' years make the other option the answer", overlap)
            if right_pick:  # the pick is decided; what else the answer says is checked as usual
                parts = [p for p in parts if not {t.stem for t in p.checked} <= asked.counts.keys()]
                if not parts:
                    return GroundednessVerdict(
                        is_grounded=True, score=1.0, fast_score=overlap, method="claims"
                    )
        checked = [
            claim_support(part, places, *anchor_terms(part, asked, source_stems, self._anchor_at), self._support_at)
            for part in parts
        ]
        unsupported = [s for s in checked if not s.supported]
        if not unsupported and (problem := _relation_problem(question, asked, parts, places, stemmer)):
            return _rejected(problem, overlap)
        if unsupported and self._verifier is not None and not any(s.hard for s in unsupported):
            verdict = self._ask_verifier(answer, sources)
            if verdict is not None:
                return _verdict_from_llm(verdict, overlap)
        return GroundednessVerdict(
            is_grounded=not unsupported,
            score=1 - len(unsupported) / len(checked),
            fast_score=overlap,
            method="claims",
            issues=[describe(s) for s in unsupported],
            unsupported_sentences=[s.sentence for s in unsupported],
        )

    def _ask_verifier(self, answer: str, sources: Sequence[str]) -> LLMVerdict | None:
        try:
            verdict = parse_llm_verdict(self._verifier(answer, sources))
        except Exception:  # any LLM failure (timeout, server down, bad reply) falls back to the claim check
            log.warning("groundedness verifier failed; using the claim check", exc_info=True)
            return None
        if not verdict.usable:
            log.warning("groundedness verifier reply had no verdict; using the claim check")
            return None
        return verdict


def _relation_problem(question: str | None, asked: Question, parts: Sequence[Claim], places: Sequence[Place],
                      stemmer: Stemmer.Stemmer) -> str | None:
    """What is wrong with how a supported answer relates its words, or None (the rules of step 5)."""
    new_terms = [t for part in parts for t in part.checked]
    sentences = [part.sentence for part in parts]
    if other := agent_of_another(asked_relations(question, sentences, new_terms, stemmer), new_terms, places):
        return f"in the sources the answer is who {other} it, not the relation asked about"
    if agent := other_agent(sentences, places, stemmer):
        return f"the sources name {agent!r} as the one who did it"
    if asked.form != "wh":
        return None
    if asks_for_a_number(question) and not names_a_number(new_terms):
        return "the question asks for a number and the answer gives none"
    if only_contrasted(new_terms, places):
        return "the sources name the answer only to set something else against it"
    if lacks_the_noun(head_noun(question, stemmer), new_terms, places):
        return "no sentence naming the answer says it is what the question asks for"
    if rival := better_listed_name(new_terms, frozenset(asked.counts), places, stemmer):
        return f"the sources list {rival!r} beside the answer, with more of what the question asks"
    return None


def _rejected(issue: str, overlap: float) -> GroundednessVerdict:
    return GroundednessVerdict(
        is_grounded=False, score=0.0, fast_score=overlap, method="claims", issues=[issue]
    )


def _verdict_from_llm(verdict: LLMVerdict, overlap_score: float) -> GroundednessVerdict:
    """A usable verifier reply as a verdict; with no explicit GROUNDED field, a score of 0.5 or more counts."""
    score = verdict.score if verdict.score is not None else float(bool(verdict.grounded))
    grounded = verdict.grounded if verdict.grounded is not None else score >= 0.5
    return GroundednessVerdict(
        is_grounded=grounded, score=score, fast_score=overlap_score, method="llm", issues=list(verdict.issues)
    )
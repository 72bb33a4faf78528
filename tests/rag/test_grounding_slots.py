"""Answer-slot alignment: among the names (or numbers) of the answer's supporting sentence, the answer must be
the one standing nearest the question's words. Sentences written for these tests."""

import pytest

from backend.config import Settings
from backend.rag.grounding import GroundednessChecker

FILM = [("Night Harbor is a 1998 drama; its producer was Paul Brenner, a banker from Leeds, and its editor was "
         "Clara Voss.")]
PRIZES = ["Marta Lind won the Nobel Prize in 1994 and, for her work on enzymes, the Wolf Prize in 2001."]
FESTIVAL = ["The Harbor Festival is held each June in Portmere, a small town near Kestrel Bay."]
# The answer opens the sentence: the sentence is about it, however far its predicate stands.
ABOUT = ["Ines Carrow (born 4 May 1931), who trained in Lyon under Paul Sarne, is a Belgian architect."]

WRONG = [
    ("Who was the editor of Night Harbor?", "Paul Brenner", FILM),
    ("In what year did Marta Lind win the Wolf Prize?", "1994", PRIZES),
    ("Which town holds the Harbor Festival each June?", "Kestrel Bay", FESTIVAL),
]
RIGHT = [
    ("Who was the editor of Night Harbor?", "Clara Voss", FILM),
    ("Who was the producer of Night Harbor?", "Paul Brenner", FILM),
    ("In what year did Marta Lind win the Wolf Prize?", "2001", PRIZES),
    ("In what year did Marta Lind win the Nobel Prize?", "1994", PRIZES),
    ("Which town holds the Harbor Festival each June?", "Portmere", FESTIVAL),
    ("Which Belgian architect trained in Lyon?", "Ines Carrow", ABOUT),
]


@pytest.mark.parametrize(("question", "answer", "sources"), WRONG)
def test_a_rival_nearer_the_question_words_makes_the_answer_not_grounded(
    question: str, answer: str, sources: list[str]
) -> None:
    verdict = GroundednessChecker().check(answer, sources, question=question)
    assert not verdict.is_grounded
    assert any("stands where the question's words point" in issue for issue in verdict.issues), verdict.issues


@pytest.mark.parametrize(("question", "answer", "sources"), RIGHT)
def test_the_answer_in_the_question_words_slot_is_grounded(question: str, answer: str, sources: list[str]) -> None:
    verdict = GroundednessChecker().check(answer, sources, question=question)
    assert verdict.is_grounded, verdict.issues


def test_a_qualifying_name_is_no_rival() -> None:
    # "American" qualifies "fantasy author": it stands next to the question's words but names no one.
    sources = ["The Glass Crown is a fantasy series by Nora Vell, a bestselling American fantasy author."]
    verdict = GroundednessChecker().check("Nora Vell", sources, question="Which fantasy author wrote The Glass Crown?")
    assert verdict.is_grounded, verdict.issues


@pytest.mark.parametrize(("question", "answer", "sources"), WRONG)
def test_the_check_can_be_switched_off(question: str, answer: str, sources: list[str]) -> None:
    # Every word of these answers stands beside the question's terms: only the slot tells them apart.
    assert GroundednessChecker(answer_slots=False).check(answer, sources, question=question).is_grounded
    assert Settings().grounding_answer_slots
    assert not Settings(grounding_answer_slots=False).grounding_answer_slots

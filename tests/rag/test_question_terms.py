"""A question's form and key terms, as the groundedness check reads them."""

import pytest

from backend.rag.question_terms import key_term_counts, question_form


@pytest.mark.parametrize(
    ("question", "form"),
    [
        ("Who was Margaret's brother?", "wh"),
        ("The series first aired in what year?", "wh"),
        ("Who was born first, Pablo Trapero or Aleksander Ford?", "choice"),
        ("Is the Thames or the Severn longer?", "choice"),
        ("Are Jane and First for Women both women's magazines?", "yes_no"),
        # The "or" joins two names of one thing, before the question word: no choice is offered.
        ("The Royal Commission or Woodward Royal Commission was set up in which country?", "wh"),
    ],
)
def test_question_form(question: str, form: str) -> None:
    assert question_form(question) == form


def test_key_term_counts_stem_and_take_the_larger_count_of_question_and_rewrite() -> None:
    counts = key_term_counts("Who was born first, Ford or Trapero?", "When was Ford born? When was Ford's rival born?")
    assert counts["born"] == 2 and counts["ford"] == 2 and counts["trapero"] == 1 and counts["rival"] == 1
    assert "who" not in counts and "when" not in counts
    assert key_term_counts(None, "") == {}

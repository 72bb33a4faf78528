"""Groundedness checking: layer-1 overlap, the sentence check, the LLM reply parser, the checker's routing."""

from collections.abc import Sequence

import pytest

from backend.rag.grounding import (
    HALLUCINATION_CHECK_PROMPT,
    GroundednessChecker,
    fast_score,
    format_check_prompt,
    parse_llm_verdict,
    says_enough_to_check,
    sentence_support,
    split_sentences,
)
from backend.rag.text_terms import content_trigrams, content_words

BRIDGE = "The bridge opened in 1932 in Sydney."
HARBOUR = [
    "The Sydney Harbour Bridge opened in 1932. It was designed by John Bradfield and built by Dorman Long.",
    (
        "The bridge carries rail, vehicular, bicycle and pedestrian traffic between the Sydney central "
        "business district and the North Shore. Its arch is 134 metres above the water."
    ),
]
# Not found in HARBOUR at all.
UNRELATED = "The Eiffel Tower in Paris was built for the 1889 World's Fair by Gustave Eiffel's company."
# Reworded, with one word ("old") no source holds: a paraphrase only a reader (the verifier) can accept.
PARAPHRASED = "The old harbour bridge in Sydney was opened in 1932."


class RecordingVerifier:
    """Stands in for a capable LLM: answers with a fixed reply (or raises) and records what it was asked."""

    def __init__(self, reply: str | Exception) -> None:
        self.reply = reply
        self.calls: list[tuple[str, list[str]]] = []

    def __call__(self, answer: str, sources: Sequence[str]) -> str:
        self.calls.append((answer, list(sources)))
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


def test_content_words_fold_case_plurals_stopwords_and_number_formats() -> None:
    assert content_words("The Bridges were opened") == content_words("bridge open")
    assert content_words("208,800 people and two towns") == content_words("208800 people 2 town")
    assert "the" not in content_words("The bridge") and content_words("The bridge")


def test_content_trigrams_need_two_content_words() -> None:
    # the-bridge-opened and bridge-opened-in have 2 content words; opened-in-the and in-the-Sydney have 1.
    assert content_trigrams("the bridge opened in the Sydney") == {
        ("the", "bridg", "open"),
        ("bridg", "open", "in"),
    }


def test_fast_score_is_word_and_trigram_overlap_weighted_0_6_and_0_4() -> None:
    # Content words old, bridge, opened, 1932: 3 of 4 in the source. Trigrams with 2+ content words:
    # the-old-bridge, old-bridge-opened, bridge-opened-in, opened-in-1932: the last two are in the source.
    assert fast_score("The old bridge opened in 1932.", [BRIDGE]) == pytest.approx(0.6 * 3 / 4 + 0.4 * 2 / 4)
    # All words present; of the-bridge-opened, bridge-opened-in, opened-in-sydney, sydney-in-1932 two match.
    assert fast_score("The bridge opened in Sydney in 1932.", [BRIDGE]) == pytest.approx(0.6 + 0.4 * 2 / 4)


def test_fast_score_ignores_citations_and_attribution_boilerplate() -> None:
    plain = fast_score("The bridge opened in 1932.", [BRIDGE])
    assert plain == pytest.approx(1.0)
    decorated = (
        "Based on the provided documents, the bridge opened in 1932 [Source 1]. Sources: [1] bridges.pdf"
    )
    assert fast_score(decorated, [BRIDGE]) == pytest.approx(plain)


def test_fast_score_searches_all_sources_together() -> None:
    answer = "The Sydney Harbour Bridge opened in 1932 and its arch is 134 metres above the water."
    assert fast_score(answer, HARBOUR) > fast_score(answer, HARBOUR[:1])
    assert fast_score(answer, []) == 0.0


def test_split_sentences_keeps_abbreviations_initials_decimals_and_wrapped_lines() -> None:
    text = (
        'Dr. Smith paid 3.5 million in 1990. He said "it was worth it." J. R. R. Tolkien wrote it! '
        "Was it the U.S. Army?\n- a list item\n2. another item\n\nA new paragraph in a PDF, hard\n"
        "wrapped mid-sentence."
    )
    assert split_sentences(text) == [
        "Dr. Smith paid 3.5 million in 1990.",
        'He said "it was worth it."',
        "J. R. R. Tolkien wrote it!",
        "Was it the U.S. Army?",
        "- a list item",
        "2. another item",
        "A new paragraph in a PDF, hard\nwrapped mid-sentence.",
    ]


def test_pub_and_fig_end_no_sentence_only_before_their_number() -> None:
    assert split_sentences("See Pub. 519 and Fig. 2 for it. Then No. 5 was filed.") == [
        "See Pub. 519 and Fig. 2 for it.", "Then No. 5 was filed.",
    ]
    assert split_sentences("They met at the pub. The night was long.") == [
        "They met at the pub.", "The night was long.",
    ]


def test_verbatim_answer_with_citations_is_grounded() -> None:
    answer = (
        "The Sydney Harbour Bridge opened in 1932 [Source 1]. It was designed by John Bradfield [Source 1]."
    )
    verdict = GroundednessChecker().check(answer, HARBOUR)
    assert verdict.is_grounded and verdict.method == "claims" and verdict.fast_score == pytest.approx(1.0)
    assert verdict.issues == [] and verdict.unsupported_sentences == []


def test_unrelated_answer_is_not_grounded_on_the_fast_path() -> None:
    verdict = GroundednessChecker().check(UNRELATED, HARBOUR)
    assert not verdict.is_grounded and verdict.method == "fast" and verdict.fast_score < 0.3


def test_fast_score_counts_only_what_the_answer_adds_to_its_question() -> None:
    question = "When did the Sydney Harbour Bridge open?"
    # Without the question, its own words make the wrong year look supported.
    assert fast_score("The Sydney Harbour Bridge opened in 1935.", HARBOUR) >= 0.8
    assert fast_score("The Sydney Harbour Bridge opened in 1935.", HARBOUR, question=question) < 0.3
    assert fast_score("The Sydney Harbour Bridge opened in 1932.", HARBOUR, question=question) == 1.0


def test_a_new_part_spread_over_a_passage_is_not_supported() -> None:
    # "opened in 1932" and "Dorman Long" stand two sentences apart: no one place says both.
    sources = ["The Sydney Harbour Bridge opened in 1932. Bradfield designed it. Dorman Long built the arch."]
    verdict = GroundednessChecker().check(
        "The Sydney Harbour Bridge opened in 1932 and was built by Dorman Long.", sources
    )
    assert not verdict.is_grounded and verdict.method == "claims"


def test_a_sentence_opening_with_a_pronoun_is_read_with_the_one_before() -> None:
    verdict = GroundednessChecker().check(
        "John Bradfield designed the bridge [Source 1].", HARBOUR, question="Who designed the Harbour Bridge?"
    )
    assert verdict.is_grounded, verdict.issues


def test_a_wrong_number_is_caught_even_when_overlap_is_high() -> None:
    answer = (
        "The Sydney Harbour Bridge opened in 1935. "
        "It was designed by John Bradfield and built by Dorman Long."
    )
    verdict = GroundednessChecker().check(answer, HARBOUR)
    assert verdict.fast_score >= 0.8  # overlap alone would call it grounded
    assert not verdict.is_grounded and verdict.method == "claims"
    assert verdict.unsupported_sentences == ["The Sydney Harbour Bridge opened in 1935."]
    assert "1935" in verdict.issues[0]


def test_spelled_out_and_formatted_numbers_match_digits() -> None:
    checker = GroundednessChecker()
    assert checker.check(
        "The town has two bridges and 208,800 inhabitants.",
        ["The town has 2 bridges and 208800 inhabitants."],
    ).is_grounded


def test_a_swapped_name_is_caught() -> None:
    verdict = GroundednessChecker().check(
        "The bridge was designed by Gustave Eiffel and opened in 1932.", HARBOUR
    )
    assert not verdict.is_grounded
    assert "Gustave" in verdict.issues[0] and "Eiffel" in verdict.issues[0]


def test_each_sentence_must_be_supported_by_one_source() -> None:
    checked = sentence_support(
        "The Sydney Harbour Bridge opened in 1932. Its arch is 134 metres above the water.", HARBOUR
    )
    assert [(s.supported, s.best_source_index) for s in checked] == [(True, 0), (True, 1)]
    # Each half of this sentence is in a different source: no one source supports it.
    [mixed] = sentence_support(
        "The Sydney Harbour Bridge opened in 1932 with its arch 134 metres high.", HARBOUR
    )
    assert not mixed.supported and mixed.best_source_index is not None


def test_meta_sentences_are_not_checked() -> None:
    answer = "Based on the documents: the bridge opened in 1932. I could not find who paid for it."
    checked = sentence_support(answer, [BRIDGE])
    assert [s.sentence for s in checked] == ["the bridge opened in 1932."]
    assert GroundednessChecker().check("I don't know. The documents do not say.", [BRIDGE]).is_grounded


def test_without_sources_every_claim_is_unsupported() -> None:
    assert sentence_support("The bridge opened in 1932.", [])[0].best_source_index is None
    assert not GroundednessChecker().check("The bridge opened in 1932.", []).is_grounded


@pytest.mark.parametrize(
    ("reply", "grounded", "score", "issues"),
    [
        ("GROUNDED: YES\nSCORE: 0.9\nISSUES: none", True, 0.9, []),
        (
            "**Grounded:** No\n**Score:** 0.2\n**Issues:**\n- says 1935, sources say 1932\n- invents a mayor",
            False,
            0.2,
            ["says 1935, sources say 1932", "invents a mayor"],
        ),
        ("grounded: no\nscore: 35%\nissues: the opening year", False, 0.35, ["the opening year"]),
        ("Yes.", True, None, []),
        ("NO", False, None, []),
        ("No, the answer invents a date.", False, None, []),
        ("The answer is not grounded in the sources.", False, None, []),
        ("GROUNDED: PARTIALLY\nSCORE: 6/10", False, 0.6, []),
        ("SCORE: 85", None, 0.85, []),
        ('{"grounded": false, "score": 0.1, "issues": ["wrong year"]}', False, 0.1, ["wrong year"]),
        ('Here you go: {"is_grounded": true}', True, None, []),
        ("No issues found, looks fine.", None, None, []),
        ("I cannot judge this.", None, None, []),
        ("SCORE: 7", None, 0.07, []),
        ("SCORE: 250", None, None, []),
    ],
)
def test_parse_llm_verdict(reply: str, grounded: bool | None, score: float | None, issues: list[str]) -> None:
    verdict = parse_llm_verdict(reply)
    assert verdict.grounded is grounded
    assert verdict.score == pytest.approx(score) if score is not None else verdict.score is None
    assert verdict.issues == issues


def test_check_prompt_numbers_the_sources_and_asks_for_the_parsed_fields() -> None:
    prompt = format_check_prompt(PARAPHRASED, HARBOUR)
    assert f"[Source 1]\n{HARBOUR[0]}" in prompt and f"[Source 2]\n{HARBOUR[1]}" in prompt
    assert PARAPHRASED in prompt
    for field in ("GROUNDED:", "SCORE:", "ISSUES:"):
        assert field in HALLUCINATION_CHECK_PROMPT


def test_verifier_decides_only_answers_that_fail_on_word_coverage() -> None:
    verifier = RecordingVerifier("GROUNDED: YES\nSCORE: 0.9\nISSUES: none")
    checker = GroundednessChecker(verifier=verifier)
    assert checker.check("The Sydney Harbour Bridge opened in 1932.", HARBOUR).method == "claims"
    assert checker.check(UNRELATED, HARBOUR).method == "fast"
    # A wrong year is a hard failure: no reader is asked to forgive it.
    assert not checker.check("The Sydney Harbour Bridge opened in 1935.", HARBOUR).is_grounded
    assert verifier.calls == []

    verdict = checker.check(PARAPHRASED, HARBOUR)
    assert verifier.calls == [(PARAPHRASED, HARBOUR)]
    assert verdict.method == "llm" and verdict.is_grounded  # the claim check alone rejects "old"
    assert not GroundednessChecker().check(PARAPHRASED, HARBOUR).is_grounded


def test_a_bare_score_from_the_verifier_decides_at_one_half() -> None:
    assert (
        GroundednessChecker(verifier=RecordingVerifier("SCORE: 0.7")).check(PARAPHRASED, HARBOUR).is_grounded
    )
    assert not (
        GroundednessChecker(verifier=RecordingVerifier("SCORE: 0.3")).check(PARAPHRASED, HARBOUR).is_grounded
    )


@pytest.mark.parametrize("reply", [TimeoutError("LLM did not answer"), "I am not sure what you mean."])
def test_verifier_failure_or_unusable_reply_falls_back_to_the_claim_check(reply: str | Exception) -> None:
    verifier = RecordingVerifier(reply)
    verdict = GroundednessChecker(verifier=verifier).check(PARAPHRASED, HARBOUR)
    assert len(verifier.calls) == 1
    assert verdict.method == "claims" and not verdict.is_grounded


def test_an_answer_needs_two_content_words_besides_its_framing_to_be_checked() -> None:
    assert not says_enough_to_check("The answer is: 2640 [Source 5]")
    assert not says_enough_to_check("4 [Source 1]")
    assert not says_enough_to_check("Yes, according to the documents [Source 2].")
    assert says_enough_to_check("They were paid $9 per hour [Source 1].")
    assert says_enough_to_check("Pranav Rajpurkar and Percy Liang [Source 1].")


# The shapes of wrong written answers that passed the overlap check (issue 11), and answers that must pass.
DC_SIGNR = [
    ("The presence of DC-SIGNR affects the MTCT of HIV-1 in several ways. DC-SIGNR genetic variants were "
    "associated with a higher risk of intrauterine transmission of HIV-1 from mother to child.")
]
MARGARET = [
    ("Margaret was the daughter of Edward the Exile. Her brother Edgar Aetheling was proclaimed king in 1066. "
    "King Edward II of England reigned from 1307 to 1327.")
]
INFLUENZA = [
    ("Coronaviruses were a significant cause of influenza-like illness among the healthy adolescents we studied. "
    "Influenza A was found in 12 samples from older adults.")
]
CALCIUM = [
    "Aspartate is the amino acid involved in calcium binding in the protein. Other molecules bind zinc."
]
PLANTS = [
    ("Calochone is a genus of flowering plants in the family Rubiaceae. "
    "Adlumia is a genus of flowering plants in the poppy family.")
]
SQUAD = ["SQuAD contains 107,785 question-answer pairs on 536 articles. Crowdworkers were paid $9 per hour."]


@pytest.mark.parametrize(
    ("question", "answer", "sources"),
    [
        # A restated question: every word is the question's own.
        (
            "How does the presence of DC-SIGNR affect the MTCT of HIV-1?",
            "The presence of DC-SIGNR affects the MTCT of HIV-1 [Source 1].",
            DC_SIGNR,
        ),
        # A wrong entity next to the question's words; the sources name it elsewhere.
        ("Who was Margaret's brother?", "Margaret's brother was King Edward II of England [Source 1].", MARGARET),
        (
            "What is a significant cause of influenza-like illness among healthy adolescents?",
            ("A significant cause of influenza-like illness among healthy adolescents is Influenza A (12) "
            "[Source 1]."),
            INFLUENZA,
        ),
        # A vacuous sentence: it names no amino acid.
        (
            "Which amino acid is involved in calcium binding in the protein?",
            ("The amino acid that is involved in calcium binding in the protein could be one such molecule "
            "[Source 1]."),
            CALCIUM,
        ),
        # A hedged sentence is checked like the others.
        ("Who was Margaret's brother?", "I'm not sure, but it was King Edward II of England [Source 1].", MARGARET),
        ("When did the Sydney Harbour Bridge open?", "Sorry, I am not certain, but it opened in 1935.", HARBOUR),
        # A negation the sources do not make.
        (
            "Are Calochone and Adlumia both flowering plants?",
            "Calochone is a flowering plant, but Adlumia is not [Source 1].",
            PLANTS,
        ),
        # A number that does not match.
        (
            "How many question-answer pairs does SQuAD contain?",
            "SQuAD contains 100,000 question-answer pairs [Source 1].",
            SQUAD,
        ),
    ],
)
def test_wrong_answer_shapes_are_not_grounded(question: str, answer: str, sources: list[str]) -> None:
    verdict = GroundednessChecker().check(answer, sources, question=question)
    assert not verdict.is_grounded and verdict.issues


@pytest.mark.parametrize(
    ("question", "answer", "sources"),
    [
        ("Who was Margaret's brother?", "Margaret's brother was Edgar Aetheling [Source 1].", MARGARET),
        ("Who was Margaret's brother?", "I'm not sure, but it was Edgar Aetheling [Source 1].", MARGARET),
        (
            "What is a significant cause of influenza-like illness among healthy adolescents?",
            "Coronaviruses [Source 1].",
            INFLUENZA,
        ),
        ("Which amino acid is involved in calcium binding in the protein?", "Aspartate [Source 1].", CALCIUM),
        # A correct short answer with a cited number, written as a digit or in a sentence.
        ("How many question-answer pairs does SQuAD contain?", "107,785 [Source 1]", SQUAD),
        ("How much were the crowdworkers paid?", "They were paid $9 per hour [Source 1].", SQUAD),
        # A paraphrase: other inflections and word order, the question's words left out.
        (
            "When was the Sydney Harbour Bridge opened?",
            "It opened in 1932 [Source 1].",
            HARBOUR,
        ),
        ("Are Calochone and Adlumia both flowering plants?", "Yes, both are a genus of flowering plants.", PLANTS),
        ("Who was born first, Pablo Trapero or Aleksander Ford?", "Aleksander Ford [Source 1].",
         [("Pablo Trapero (born 4 October 1971) is an Argentine director. Aleksander Ford (born 24 November 1908) "
          "was a Polish film director.")]),
    ],
)
def test_right_answers_stay_grounded(question: str, answer: str, sources: list[str]) -> None:
    verdict = GroundednessChecker().check(answer, sources, question=question)
    assert verdict.is_grounded, verdict.issues


def test_the_rewritten_question_s_words_are_given_too() -> None:
    answer = "The Harbour Bridge in Sydney opened in 1932 [Source 1]."
    assert GroundednessChecker().check(answer, HARBOUR, question="When did it open?",
                                       rewritten_question="When did the Sydney Harbour Bridge open?").is_grounded
    restated = "The Sydney Harbour Bridge opened [Source 1]."
    verdict = GroundednessChecker().check(restated, HARBOUR, question="And the bridge?",
                                          rewritten_question="When did the Sydney Harbour Bridge open?")
    assert not verdict.is_grounded

"""The answerability decision on passages built by hand: the per-query threshold, the answer-bearing sentence,
and the meaning test with the real bundled embedder."""

import pytest

from backend.ingest.chunker import ParentChildChunker
from backend.models import Chunk, LoadedDocument, Page, Passage
from backend.rag.answerability import (
    AnswerabilityPolicy,
    closest_passages,
    document_titles,
    judge,
    similarity_to,
)
from tests.rag.test_nodes import passage

POLICY = AnswerabilityPolicy()
BRIDGE = [
    passage(0, "The Harbour Bridge opened in 1932 after eight years of work. Its steel arch spans 503 metres. "
               "Workers painted the bridge grey.", "bridge.pdf"),
    passage(1, "The bridge carries eight lanes of road traffic and two railway lines.", "bridge.pdf"),
]


def never_close(sentences):
    return [0.0] * len(sentences)


def test_the_threshold_is_calibrated_per_query():
    ranked = [passage(n, "text") for n in range(3)]  # scores 0.90, 0.89, 0.88
    assert closest_passages(ranked, margin=0.015) == ranked[:2]
    assert closest_passages(ranked, margin=1.0) == ranked
    assert closest_passages([], margin=0.2) == []


@pytest.mark.parametrize("question", [
    "When did the Harbour Bridge open?",
    "How long is the steel arch of the bridge?",
    "How many lanes of traffic does the bridge carry?",
    "What does the bridge carry?",  # untyped: the key terms alone decide
])
def test_a_sentence_with_the_key_terms_and_the_type_asked_answers(question):
    verdict = judge(question, BRIDGE, POLICY, never_close)
    assert verdict.answerable and verdict.sentence and verdict.similarity is None


@pytest.mark.parametrize("question", [
    "Who designed the Harbour Bridge?",  # on topic, but the passages name nobody
    "How much did the Harbour Bridge cost?",  # numbers there are, but none about cost
    "When was the bridge's toll removed?",
    "What is the bridge's speed limit?",
])
def test_on_topic_passages_that_do_not_answer_are_no_answer(question):
    assert not judge(question, BRIDGE, POLICY, never_close).answerable


def test_no_passages_answer_nothing():
    verdict = judge("When did the bridge open?", [], POLICY, never_close)
    assert not verdict.answerable and verdict.sentence is None


def test_an_abbreviation_carries_its_long_form():
    abstract = [passage(0, "Medullary thymic epithelial cells (mTEC) present antigens. Mature mTEC turn over in "
                           "2 to 3 weeks, immature ones more slowly.")]
    assert judge("How fast do mature medullary thymic epithelial cells turn over?", abstract, POLICY,
                 never_close).answerable


def test_a_paraphrase_is_found_by_meaning_but_meaning_alone_never_answers(embedder):
    corpora = [passage(0, "BERT is pre-trained on the BooksCorpus (800M words) and English Wikipedia (2,500M words). "
                          "Fine-tuning is inexpensive.")]
    question = "Which corpora were used to pre-train BERT?"
    assert not judge(question, corpora, POLICY, never_close).answerable
    verdict = judge(question, corpora, POLICY, similarity_to(question, embedder))
    assert verdict.answerable and verdict.similarity >= POLICY.min_similarity and "BooksCorpus" in verdict.sentence
    # A sentence close in meaning but carrying too few of the key terms is not tried at all.
    assert not judge("Who funded the research behind BERT?", corpora, POLICY, lambda s: [1.0] * len(s)).answerable


TRIAL = [passage(0, "Of the 632 randomized patients (mean age, 57.1 years [SD, 10.6]; men, 395 (62.7%); diabetes "
                    "duration, 6.3 years [SD, 5.2]; body weight, 92.3 kg [SD, 16.8]; BMI, 31.7 [SD, 4.3]), 583 (92%) "
                    "completed the trial.")]


def test_the_meaning_test_reads_a_sentence_without_its_long_asides(embedder):
    question = "What share of the randomized patients finished the trial?"  # "finished" for "completed"
    compared = []

    def recorded(sentences):
        compared.extend(sentences)
        return similarity_to(question, embedder)(sentences)

    verdict = judge(question, TRIAL, POLICY, recorded)
    # The baseline characteristics in brackets are gone, the short "(92%)" stays.
    assert compared == ["Of the 632 randomized patients, 583 (92%) completed the trial."]
    assert verdict.answerable and verdict.similarity >= POLICY.min_similarity
    assert "(mean age" in verdict.sentence  # the sentence shown is the whole one


def test_a_compound_question_is_answerable_when_one_part_is():
    question = "Who designed the Harbour Bridge, and when did it open?"
    assert judge(question, BRIDGE, POLICY, never_close).answerable


# From the FAA's proposed airworthiness directive for the 737 MAX (Federal Register 2020-17221).
NOTICE = [
    passage(0, "DATES: The FAA must receive comments on this proposed AD by September 21, 2020. "
               "ADDRESSES: You may send comments, using the procedures found in 14 CFR 11.43 and 11.45.",
            "notice.pdf"),
    passage(1, "The data from the flight data recorders indicated that if a single erroneously high AOA "
               "sensor input is received by the flight control system, the maneuvering characteristics "
               "augmentation system (MCAS) can command repeated airplane nose-down trim of the horizontal "
               "stabilizer.",
            "notice.pdf"),
]


@pytest.mark.parametrize("question", [
    "When is the deadline for comments?",  # "deadline" names the kind of answer, and no sentence says it
    "What does MCAS stand for?",  # answered by the definition, which never says "stand"
])
def test_the_words_that_only_name_the_answer_kind_are_not_required(question):
    assert judge(question, NOTICE, POLICY, never_close).answerable


def test_a_section_number_is_no_quantity():
    evaluation = [passage(0, "4.1 Evaluation Method\nWe evaluated the obtained tables as follows. "
                             "For each row in a table, we added a summary of the source articles.")]
    assert not judge("How many people evaluated the tables?", evaluation, POLICY, never_close).answerable


# BEIR SciFact 24408040: the title names the population; the answering sentence does not repeat it.
HEART_FAILURE = [passage(0, (
    "Heart failure admissions in adults with congenital heart disease; risk factors and prognosis.\n\n"
    "BACKGROUND Heart failure (HF) is a serious complication and often the cause of death in adults with "
    "congenital heart disease (CHD). METHODS The Dutch CONCOR registry was linked to the Hospital Discharge "
    "Registry and National Mortality Registry to obtain data on HF-admissions and mortality. "
    "RESULTS Of 10,808 adult patients (49% male), 274 (2.5%) were admitted for HF during a median "
    "follow-up period of 21 years."
), "scifact-24408040.txt", document="s")]


def test_the_documents_title_carries_the_subject_an_answer_does_not_repeat():
    question = "How many of the adults with congenital heart disease were admitted for heart failure?"
    verdict = judge(question, HEART_FAILURE, POLICY, never_close)
    assert verdict.answerable and "274" in verdict.sentence
    assert not judge(question, HEART_FAILURE, AnswerabilityPolicy(title_weight=0.0), never_close).answerable
    # Not a title: the same text in a passage not opening its document; a first line too long for a title.
    later = [passage(3, HEART_FAILURE[0].parent.text, document="s")]
    assert not judge(question, later, POLICY, never_close).answerable
    assert document_titles([passage(0, "A first line that runs on. " * 10 + "\nThe next line.")]) == {}


def test_the_title_counts_below_the_sentences_own_words():
    question = "How many of the adults with congenital heart disease were admitted for heart failure?"
    coverage = [judge(question, HEART_FAILURE, AnswerabilityPolicy(title_weight=weight), never_close).coverage
                for weight in (0.0, POLICY.title_weight, 1.0)]
    assert coverage == sorted(coverage) and len(set(coverage)) == 3
    # The title's subject is on topic for any question about the study; it does not answer one about age.
    assert not judge("What was the average age of the patients at their first heart failure admission?",
                     HEART_FAILURE, POLICY, never_close).answerable


def test_the_sentence_before_counts_below_the_sentences_own_words():
    # After DrQA (Chen et al., 2017): "trained" and "Document Reader" only in the sentence before the number.
    reader = [passage(1, "A single Document Reader model is trained on the SQuAD training set only and "
                         "used on all evaluation sets. The model uses 3 layers and 128 hidden units.")]
    question = "How many layers does the trained Document Reader use?"
    own_only = judge(question, reader, AnswerabilityPolicy(context_weight=0.0), never_close).coverage
    weighted = judge(question, reader, POLICY, never_close).coverage
    full = judge(question, reader, AnswerabilityPolicy(context_weight=1.0), never_close).coverage
    assert own_only < weighted < full == 1.0


def test_the_title_is_found_in_the_chunkers_first_parent_only():
    """Ties ``document_titles`` to how ``ParentChildChunker`` names a document's parents."""
    body = " ".join(["Of 10,808 adult patients, 274 were admitted for heart failure."] * 60)
    document = LoadedDocument("hf.txt", "txt", (Page(1, f"Heart failure admissions in adults\n\n{body}"),))
    parents, _ = ParentChildChunker(2000, 200, 400, 50).chunk(document, "hf")
    assert len(parents) > 1
    passages = [Passage(parent, Chunk(f"{parent.parent_id}-c0", parent.parent_id, "hf", "hf.txt", 1, ""), 0.5)
                for parent in parents]
    assert document_titles(passages) == {"hf": "Heart failure admissions in adults"}
    assert document_titles(passages[1:]) == {}


# After California's WARN report: one notice per row, no full stops.
LAYOFFS = [passage(0, "Notice Date Effective Company City No. Of Employees Layoff/Closure\n"
                      "09/15/2015 07/06/2015 KLA-Tencor Corporation Milpitas 213\nLayoff Permanent\n"
                      "09/04/2015 07/06/2015 Bridgepoint Education, Inc. San Diego 15 Layoff Permanent\n"
                      "06/29/2015 07/07/2015 BAE Systems San Francisco 78 Layoff Temporary", "warn.pdf")]


def test_a_table_row_is_read_as_a_sentence_of_its_own():
    verdict = judge("How many layoffs does KLA-Tencor Corporation have in Milpitas?", LAYOFFS, POLICY,
                    never_close)
    assert verdict.answerable and verdict.sentence.startswith("09/15/2015")
    assert "Bridgepoint" not in verdict.sentence
    # A company no row names: the rows of others do not add up to its answer.
    assert not judge("How many layoffs does Tesla have in Fremont?", LAYOFFS, POLICY, never_close).answerable


def test_a_number_the_question_gives_restricts_what_it_asks():
    breaches = [passage(1, "The Identity Theft Resource Center reports that almost 5000 data breaches have "
                           "occurred since 2005. The average cost of a breach increased in 2013 by 15%.")]
    assert not judge("How many data breaches happened in 2013?", breaches, POLICY, never_close).answerable
    assert judge("How many data breaches have occurred since 2005?", breaches, POLICY, never_close).answerable


def test_a_hyphenated_spelling_carries_the_closed_one():
    retention = [passage(1, "The most recent seven years of retention data are in on-line status.")]
    verdict = judge("How many years of retention data are online?", retention, POLICY, never_close)
    assert verdict.answerable and verdict.coverage == 1.0


def test_a_contact_question_asks_for_that_kind_of_string():
    manual = [passage(0, "Contact BMF Database Administrators. Requests are processed weekly.", "irm.pdf")]
    question = "What's the phone number for the BMF Database Administrators?"
    assert not judge(question, manual, POLICY, lambda s: [1.0] * len(s)).answerable
    listed = [passage(0, "Contact BMF Database Administrators at (215) 516-2000.", "irm.pdf")]
    assert judge(question, listed, POLICY, never_close).answerable


def test_a_sections_heading_counts_like_a_title():
    # After the IRS manual IRM 2.3.59: the heading names what the section's sentences are about.
    manual = [passage(2, "2.3.59.5\nRestoring Retention Tax Modules to Master File\n"
                         "(1) Modules are sent to the master file every week.\n"
                         "a. The cut-off time for restore requests is 5:00 pm Wednesday.", "irm.pdf")]
    question = "What is the cut-off time for requests to restore retention tax modules?"
    verdict = judge(question, manual, POLICY, never_close)
    assert verdict.answerable and verdict.sentence.startswith("a. The cut-off")
    assert not judge(question, manual, AnswerabilityPolicy(title_weight=0.0), never_close).answerable

"""`axiom eval answerability`: the labelled set's shape, and one real run over a shared PDF."""

import json
from collections import Counter
from pathlib import Path

from backend.eval.answerability import load_questions, run_answerability_eval, sweep, sweep_policies
from backend.rag.answerability import AnswerabilityPolicy

LABELLED = Path(__file__).resolve().parents[2] / "bench" / "data" / "answerability.jsonl"
SQUAD = "academic_2col_squad_rajpurkar2016.pdf"


def test_the_labelled_set_is_balanced_across_splits_and_labels():
    questions = load_questions(LABELLED)
    assert len({q.id for q in questions}) == len(questions) >= 80
    counts = Counter((q.split, q.answerable) for q in questions)
    splits = ("dev", "test", "test2", "test3", "test4")
    assert set(counts) == {(split, label) for split in splits for label in (True, False)}
    assert all(count >= 18 for count in counts.values())
    assert {q.corpus for q in questions} == {"pdfs", "scifact", "nfcorpus"}


def test_a_real_run_answers_the_answerable_and_declines_the_rest(tmp_path, make_services, shared_data):
    rows = [
        {"id": "q1", "split": "test", "corpus": "pdfs", "document": SQUAD, "answerable": True,
         "question": "How many question-answer pairs does SQuAD contain?"},
        {"id": "q2", "split": "test", "corpus": "pdfs", "document": SQUAD, "answerable": False,
         "question": "How old were the crowdworkers who wrote the questions?"},
        {"id": "q3", "split": "dev", "corpus": "pdfs", "document": SQUAD, "answerable": True,
         "question": "Not in the test split"},
    ]
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(row) + "\n" for row in rows))
    services = make_services(tmp_path / "data")
    report, retrieved = run_answerability_eval(
        services, questions, shared_data, split="test", policy=AnswerabilityPolicy(), distractors=0, log=print
    )
    assert (report.answerable, report.unanswerable) == (1, 1)
    assert report.answered == 1.0 and report.honest_not_found == 1.0 and report.misjudged == []
    assert 0 < report.mean_kept <= report.mean_graded <= services.settings.retrieval_final_k
    assert "honest not-found on unanswerable: 1.000 of 1" in report.table()
    # A policy that demands every key term and no meaning test still declines what the set cannot answer.
    strict = AnswerabilityPolicy(min_coverage=1.0, min_similarity=1.01)
    assert [(policy, not_found) for policy, _, not_found in sweep(retrieved, [strict], services.embedder)] == [
        (strict, 1.0)]
    policies = sweep_policies()
    assert AnswerabilityPolicy() in policies and len(set(policies)) == len(policies)
    # The weights of the sentence before and of the title are swept too, at the chosen thresholds.
    assert {(p.context_weight, p.title_weight) for p in policies} >= {(0.5, 0.0), (0.75, 0.5), (1.0, 1.0)}


def test_nfcorpus_abstracts_are_asked_in_their_own_chat(tmp_path, make_services, shared_data):
    rows = [{"id": "n1", "split": "test4", "corpus": "nfcorpus", "document": "MED-10", "answerable": True,
             "question": "How many breast cancer patients were in the Finnish cohort?"}]
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(row) + "\n" for row in rows))
    services = make_services(tmp_path / "data")
    report, retrieved = run_answerability_eval(
        services, questions, shared_data, split="test4", policy=AnswerabilityPolicy(), distractors=1, log=print
    )
    assert report.by_corpus["nfcorpus"]["answered"] == 1.0
    # The abstract asked about and one distractor (the corpus's next), in the chat named after the corpus.
    assert {p.parent.filename for r in retrieved for p in r.graded} <= {"nfcorpus-MED-10.txt", "nfcorpus-MED-14.txt"}
    assert retrieved[0].graded[0].parent.filename == "nfcorpus-MED-10.txt"

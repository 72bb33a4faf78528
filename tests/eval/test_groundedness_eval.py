"""`axiom eval groundedness`: loading HaluEval QA, the metrics, and the default checker on real data."""

import json
from pathlib import Path

import pytest

from backend.eval.groundedness import (
    LabelledAnswer,
    evaluate_groundedness,
    load_halueval,
    run_groundedness_eval,
)
from backend.rag.grounding import GroundednessChecker

RECORDS = [
    {
        "knowledge": "The Oberoi Group is a hotel company with its head office in Delhi.",
        "question": "The Oberoi family is part of a hotel company that has a head office in what city?",
        "right_answer": "Delhi",
        "hallucinated_answer": "Mumbai, the financial capital of India.",
    },
    {
        "knowledge": "Mara Santangelo (born 28 June 1981) is a former professional tennis player from Italy.",
        "question": "Who is the former professional tennis player from Italy?",
        "right_answer": "Mara Santangelo",
        "hallucinated_answer": "Chris Evert",
    },
]

# Grounded answers written for real HaluEval records (by record index): they reword, reorder and combine the
# knowledge as a generated answer would, so most land in layer 1's in-between band, where HaluEval's own right
# answers (copied spans) never go. The sentence check must accept them.
PARAPHRASES = {
    29: "Both 750 Seventh Avenue and 101 Park Avenue are skyscrapers located in New York City.",
    48: "Robert Sheehan, an Irish actor, starred in The Messenger alongside Lily Cole.",
    77: (
        "R Adams Cowley invented the prototype pacemaker used by Dwight D. Eisenhower, "
        "the 34th President of the United States."
    ),
    109: (
        "Cheryl Campbell, who starred opposite Bob Hoskins in Pennies From Heaven in 1978, "
        "plays Kenneth Williams's mother Lou in the 2006 BBC Four play."
    ),
    165: (
        "In 2017 Afghanistan took part in the Deaflympics for the first time. "
        "That event is officially known as the 23rd Summer Deaflympics and was held in Samsun, Turkey."
    ),
    187: (
        "Mara Santangelo is the former professional tennis player from Italy; "
        "Chris Evert is from the United States."
    ),
    202: (
        "Kamal Shalorus, who competes in the Lightweight division, "
        "co-founded the American Combat Association with Matthew Granahan."
    ),
    259: "West Ridge and North Ridge are separated by Castle Road.",
    274: "Yes. Calochone is a genus of flowering plants, and Adlumia is a genus in the Papaveraceae family.",
    298: (
        "The psalm setting Dixit Dominus was composed by George Frideric Handel, "
        "a German-born baroque composer who later became British and spent most of his career in London."
    ),
    333: (
        "Betzy Kjelsberg, the first female board member of the Liberal Party, "
        "was born in Svelvik in Vestfold county, Norway."
    ),
    420: "Barton Mine: after a fire there in the early 1900s, it never had active mining again.",
    485: (
        "Mike Gibbons claimed the middleweight title in 1909 "
        "after Stanley Ketchel was murdered on a ranch in Conway, Missouri."
    ),
}


@pytest.fixture
def halueval_path(shared_data: Path) -> Path:
    path = shared_data / "halueval" / "qa_one-turn_data.json"
    if not path.is_file():
        pytest.skip(f"HaluEval QA not found at {path}")
    return path


def test_load_halueval_gives_a_grounded_and_a_hallucinated_pair_per_record(tmp_path: Path) -> None:
    path = tmp_path / "qa.json"
    path.write_text("\n".join(json.dumps(record) for record in RECORDS) + "\n")
    pairs = load_halueval(path)
    assert pairs == [
        LabelledAnswer(RECORDS[0]["knowledge"], "Delhi", True),
        LabelledAnswer(RECORDS[0]["knowledge"], "Mumbai, the financial capital of India.", False),
        LabelledAnswer(RECORDS[1]["knowledge"], "Mara Santangelo", True),
        LabelledAnswer(RECORDS[1]["knowledge"], "Chris Evert", False),
    ]
    prefixed = load_halueval(path, question_prefixed=True)
    assert prefixed[0].answer == (
        "The Oberoi family is part of a hotel company that has a head office in what city: Delhi"
    )
    assert [p.label_grounded for p in prefixed] == [True, False, True, False]


def test_load_halueval_reads_a_json_array_and_rejects_other_records(tmp_path: Path) -> None:
    array = tmp_path / "qa_array.json"
    array.write_text(json.dumps(RECORDS))
    assert len(load_halueval(array)) == 4
    wrong = tmp_path / "general.json"
    wrong.write_text(json.dumps({"user_query": "hi", "chatgpt_response": "hello", "hallucination": "no"}))
    with pytest.raises(ValueError, match="record 1 is not HaluEval QA"):
        load_halueval(wrong)


def test_evaluate_counts_flagged_not_grounded_as_positive() -> None:
    source = "Kjelsberg was born in Svelvik in 1866. She was a politician for the Liberal Party."
    pairs = [
        LabelledAnswer(source, "Kjelsberg was born in Svelvik in 1866.", True),  # passes: true negative
        LabelledAnswer(source, "She was a politician for the Liberal Party.", True),  # true negative
        LabelledAnswer(source, "Kjelsberg was born in Svelvik in 1871.", False),  # flagged: true positive
        LabelledAnswer(source, "A famous painter from Bergen, Norway.", False),  # true positive
        LabelledAnswer(source, "Yes.", False),  # nothing to check, passes: false negative
        # Grounded, but reworded too far for word overlap: false positive.
        LabelledAnswer(
            source, "In 1866 the town of Svelvik saw the birth of Kjelsberg, a Liberal politician.", True
        ),
    ]
    report = evaluate_groundedness(GroundednessChecker(), pairs)
    assert report.n == 6
    assert report.precision == pytest.approx(2 / 3) and report.recall == pytest.approx(2 / 3)
    assert report.f1 == pytest.approx(2 / 3) and report.accuracy == pytest.approx(4 / 6)
    assert sum(report.per_method_counts.values()) == 6 and report.ms_per_check > 0
    assert "positive = flagged NOT grounded" in report.table()
    assert report.as_dict()["positive"] == "flagged not grounded"


def test_default_checker_detects_hallucinations_on_held_out_halueval(halueval_path: Path) -> None:
    # Records 250-289: the half the sentence check was not tuned on.
    report = evaluate_groundedness(GroundednessChecker(), load_halueval(halueval_path)[500:580])
    assert report.n == 80
    assert report.accuracy > 0.75  # chance is 0.5
    assert report.precision > 0.9 and report.recall > 0.6


def test_paraphrased_grounded_answers_pass(halueval_path: Path) -> None:
    knowledge = [pair.source_text for pair in load_halueval(halueval_path)[::2]]
    checker = GroundednessChecker()
    verdicts = {index: checker.check(answer, [knowledge[index]]) for index, answer in PARAPHRASES.items()}
    assert {index: v.issues for index, v in verdicts.items() if not v.is_grounded} == {}
    assert sum(v.method == "sentences" for v in verdicts.values()) >= len(PARAPHRASES) // 2


def test_run_groundedness_eval_reports_both_answer_sets(halueval_path: Path, tmp_path: Path) -> None:
    subset = tmp_path / "qa_first20.json"
    subset.write_text("".join(halueval_path.read_text().splitlines(keepends=True)[:20]))
    text = run_groundedness_eval(subset, as_json=False)
    assert "answers as given:" in text and "answers prefixed by their question:" in text
    assert text.count("positive = flagged NOT grounded") == 2
    reports = json.loads(run_groundedness_eval(subset, as_json=True))
    assert set(reports) == {"answers as given", "answers prefixed by their question"}
    assert all(report["n"] == 40 and 0 <= report["f1"] <= 1 for report in reports.values())

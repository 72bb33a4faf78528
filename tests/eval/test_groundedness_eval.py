"""`axiom eval groundedness`: loading HaluEval QA, the metrics, and the default checker on real data."""

import json
from pathlib import Path

import pytest

from backend.eval.groundedness import (
    LabelledAnswer,
    evaluate_groundedness,
    load_halueval,
    load_labelled_answers,
    restate_as_sentence,
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
# knowledge as a generated answer would, where HaluEval's own right answers are copied spans.
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
    oberoi, mara = (record["question"] for record in RECORDS)
    assert pairs == [
        LabelledAnswer((RECORDS[0]["knowledge"],), "Delhi", True, oberoi),
        LabelledAnswer((RECORDS[0]["knowledge"],), "Mumbai, the financial capital of India.", False, oberoi),
        LabelledAnswer((RECORDS[1]["knowledge"],), "Mara Santangelo", True, mara),
        LabelledAnswer((RECORDS[1]["knowledge"],), "Chris Evert", False, mara),
    ]
    prefixed = load_halueval(path, "prefixed")
    assert prefixed[0].answer == (
        "The Oberoi family is part of a hotel company that has a head office in what city: Delhi"
    )
    restated = load_halueval(path, "restated")
    assert restated[0].answer == "The Oberoi family is part of a hotel company that has a head office in the city Delhi."
    assert [p.label_grounded for p in prefixed + restated] == [True, False, True, False] * 2


@pytest.mark.parametrize(
    ("question", "answer", "statement"),
    [
        ("What is the length of the track?", "6.213 km long", "The length of the track is 6.213 km long."),
        ("Who was Margaret's brother?", "Edgar", "Margaret's brother was Edgar."),
        ("Which magazine was started first?", "Arthur's Magazine",
         "The magazine was started first is Arthur's Magazine."),
        ("Where did the music originate?", "the United States",
         "The place where the music originate is the United States."),
        ("How many pairs does SQuAD contain?", "107,785", "The number of pairs does SQuAD contain is 107,785."),
        ("Milhouse was named after who?", "Richard Nixon", "Milhouse was named after Richard Nixon."),
        ("The series first aired in what year?", "2006", "The series first aired in the year 2006."),
        ("Are Jane and First for Women both magazines?", "yes",
         "Whether are Jane and First for Women both magazines: yes."),
    ],
)
def test_restate_as_sentence_follows_fixed_rules(question: str, answer: str, statement: str) -> None:
    assert restate_as_sentence(question, answer) == statement


def test_load_halueval_reads_a_json_array_and_rejects_other_records(tmp_path: Path) -> None:
    array = tmp_path / "qa_array.json"
    array.write_text(json.dumps(RECORDS))
    assert len(load_halueval(array)) == 4
    wrong = tmp_path / "general.json"
    wrong.write_text(json.dumps({"user_query": "hi", "chatgpt_response": "hello", "hallucination": "no"}))
    with pytest.raises(ValueError, match="record 1 is not HaluEval QA"):
        load_halueval(wrong)


def test_load_labelled_answers_needs_a_label_on_every_line(tmp_path: Path) -> None:
    record = {"question": "Q?", "answer": "A [Source 1].", "sources": ["A."], "label": "grounded"}
    path = tmp_path / "labelled.jsonl"
    path.write_text(json.dumps(record) + "\n\n" + json.dumps({**record, "label": "not grounded"}) + "\n")
    assert load_labelled_answers(path) == [
        LabelledAnswer(("A.",), "A [Source 1].", True, "Q?"), LabelledAnswer(("A.",), "A [Source 1].", False, "Q?")
    ]
    path.write_text(json.dumps({**record, "label": "maybe"}) + "\n")
    with pytest.raises(ValueError, match="line 1 has no label"):
        load_labelled_answers(path)


def test_evaluate_counts_flagged_not_grounded_as_positive_and_reports_grounded_precision() -> None:
    source = ("Kjelsberg was born in Svelvik in 1866. She was a politician for the Liberal Party.",)
    born, party = "Where and when was Kjelsberg born?", "Which party was Kjelsberg in?"
    pairs = [
        LabelledAnswer(source, "Kjelsberg was born in Svelvik in 1866.", True, born),  # passes: true negative
        LabelledAnswer(source, "The Liberal Party.", True, party),  # true negative
        LabelledAnswer(source, "Kjelsberg was born in Svelvik in 1871.", False, born),  # flagged: true positive
        LabelledAnswer(source, "A famous painter from Bergen, Norway.", False, party),  # true positive
        LabelledAnswer(source, "She was a politician for the Liberal Party.", False, born),  # missed: false neg.
        # Grounded, but reworded too far for a word-level check: false positive.
        LabelledAnswer(source, "Svelvik saw her birth in 1866.", True, born),
    ]
    report = evaluate_groundedness(GroundednessChecker(), pairs)
    assert report.n == 6
    assert report.precision == pytest.approx(2 / 3) and report.recall == pytest.approx(2 / 3)
    assert report.f1 == pytest.approx(2 / 3) and report.accuracy == pytest.approx(4 / 6)
    assert report.grounded_precision == pytest.approx(2 / 3)  # of the three called grounded, two are
    assert sum(report.per_method_counts.values()) == 6 and report.ms_per_check > 0
    assert report.max_ms_per_check >= report.ms_per_check
    assert "positive = flagged NOT grounded" in report.table()
    assert report.as_dict()["positive"] == "flagged not grounded"


@pytest.mark.parametrize("form", ["given", "prefixed", "restated"])
def test_default_checker_detects_hallucinations_on_held_out_halueval(halueval_path: Path, form: str) -> None:
    # Records 251-300: the half the parameters were not chosen on.
    report = evaluate_groundedness(GroundednessChecker(), load_halueval(halueval_path, form)[500:600])
    assert report.n == 100
    assert report.accuracy > 0.8  # chance is 0.5
    assert report.grounded_precision > 0.8 and report.recall > 0.8


def test_paraphrased_grounded_answers_pass_when_one_sentence_holds_them(halueval_path: Path) -> None:
    records = load_halueval(halueval_path)[::2]

    def grounded(checker: GroundednessChecker) -> set[int]:
        return {
            index for index, answer in PARAPHRASES.items()
            if checker.check(answer, records[index].sources, question=records[index].question).is_grounded
        }

    # Rewordings of what one source sentence says pass; the others join facts from several sentences, which
    # the claim check does not accept on its own.
    assert grounded(GroundednessChecker()) == {29, 187, 259, 420}
    # Where they fail on word coverage alone, a capable model's verifier decides; where they name something
    # ("Irish", "United States", "Lou") or repeat a question term the answering sentence lacks, none is asked.
    always_yes = GroundednessChecker(verifier=lambda answer, sources: "GROUNDED: YES")
    assert grounded(always_yes) == set(PARAPHRASES) - {48, 77, 109, 202, 298}


def test_run_groundedness_eval_reports_every_form_and_split(halueval_path: Path, tmp_path: Path) -> None:
    subset = tmp_path / "qa_first20.json"
    subset.write_text("".join(halueval_path.read_text().splitlines(keepends=True)[:20]))
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text(json.dumps({"question": "Q?", "answer": "A.", "sources": ["A."], "label": "grounded"}))
    text = run_groundedness_eval(subset, as_json=False, labelled=labelled)
    assert text.count("positive = flagged NOT grounded") == 10
    reports = json.loads(run_groundedness_eval(subset, as_json=True, labelled=labelled))
    assert set(reports) == {
        f"{form}, {split}"
        for form in ("answers as given", "answers prefixed by their question",
                     "question restated as a sentence + answer")
        for split in ("records 1-10", "records 11-20", "all 20 records")
    } | {"labelled answers (labelled.jsonl)"}
    assert reports["answers as given, all 20 records"]["n"] == 40
    assert reports["labelled answers (labelled.jsonl)"]["n"] == 1

"""The groundedness rules beyond word coverage: names as one name, which option came first, "both", whose
agent the answer is, a listed rival, the noun asked for, a wanted number. Each wrong answer below has every
word in one source sentence."""

import json
from pathlib import Path

import pytest
from pypdf import PdfReader

from backend.rag.grounding import GroundednessChecker

ANSWERABILITY = Path(__file__).resolve().parents[2] / "bench" / "data" / "answerability.jsonl"

ESTATE = [
    ("Rainbow Terrace, now known as Lullwater Estate, is the Mediterranean-style mansion built for Lucy "
     "Candler, daughter of Asa Candler.")
]
MAGAZINES = [
    ("Harper's Bazaar (founded 1867) is an American fashion magazine. "
     "Vogue (founded 1892) is a fashion magazine.")
]
BANDS = [
    ("The New Pornographers is a Canadian indie rock band formed in Vancouver. "
     "Kings of Leon is an American rock band that formed in Nashville.")
]
BOTH_AMERICAN = [
    ("Tim McIlrath is an American punk rock musician. "
     "Spike Slawson is an American punk rock musician and singer.")
]
FILM = [
    ("Beowulf is a 2007 fantasy film directed by Robert Zemeckis and written by Neil Gaiman and Roger Avary, "
     "based on the Old English epic poem.")
]
FOUNDERS = [
    ("The American Combat Association is a mixed martial arts company founded by wrestler Kamal Shalorus and "
     "broadcaster Matthew Granahan. Kamal Shalorus is an Iranian fighter in the Lightweight division.")
]
DYNASTY = ["The Ptolemaic dynasty ruled Egypt in the Hellenistic period. Their rule lasted for 275 years."]
ALIAS = [
    ("John Gourley is the lead singer and guitarist of the Portland rock band Portugal. "
     "Gourley is also a visual artist who often uses the alias The Fantastic The.")
]
RETAILERS = [
    "Target Corporation is the second-largest discount store retailer in the United States, behind Walmart."
]
COLLEGES = [
    ("Among the colleges that have sent students are Elmhurst College, St. Olaf College, Middlebury College "
     "and William Jewell College. It was founded in 1874 by Norwegian-American pastors."),
]
BOOKS = ["BERT was pre-trained on the books corpus, and on Wikipedia."]
SERIES = ["Peter O'Meara played 1st Lt Norman Dike in the HBO series \"Band of Brothers\"."]

MANSION = "What is the current name of the mansion built for the daughter of Asa Candler?"
FIRST = "Which magazine was founded first, Harper's Bazaar or Vogue?"
ROCK = "Are both The New Pornographers and Kings of Leon American rock bands?"
PUNK = "Are both Tim McIlrath and Spike Slawson American punk rock musicians?"
FIGHTER = "Which Lightweight division fighter founded the American Combat Association?"
RULE = "How long was the rule of the Ptolemaic dynasty?"
LEAD = "The lead singer of the Portland rock band goes by what alias?"
RETAILER = "What retailer is the second-largest in the United States?"

WRONG = [
    (MANSION, "Rainbow Estate", ESTATE),
    (FIRST, "Vogue", MAGAZINES),
    (ROCK, "Yes", BANDS),
    (ROCK, "Yes, both The New Pornographers and Kings of Leon are American rock bands.", BANDS),
    (PUNK, "No", BOTH_AMERICAN),
    ("Beowulf, a 2007 fantasy film, was directed by who?", "Neil Gaiman", FILM),
    ("Who directed the 2007 film Beowulf?", "Neil Gaiman", FILM),
    ("Who directed the 2007 film Beowulf?", "Neil Gaiman directed Beowulf.", FILM),
    (FIGHTER, "Matthew Granahan", FOUNDERS),
    (RULE, "The rule of the Ptolemaic dynasty lasted a long time.", DYNASTY),
    ("What connects Peter O'Meara and Norman Dike?", "Peter O'Meara played Norman Dike's brother.", SERIES),
    (LEAD, "John Gourley is the lead singer of Portugal.", ALIAS),
    (RETAILER, "Walmart", RETAILERS),
    # "It" after a list of four colleges picks none of them out.
    ("Which college that has sent students was founded in 1874?", "Elmhurst College was founded in 1874.",
     COLLEGES),
]
RIGHT = [
    (MANSION, "Lullwater Estate", ESTATE),
    (FIRST, "Harper's Bazaar", MAGAZINES),
    (ROCK, "No", BANDS),
    (PUNK, "Yes", BOTH_AMERICAN),
    ("Beowulf, a 2007 fantasy film, was directed by who?", "Robert Zemeckis", FILM),
    ("Who wrote the 2007 film Beowulf?", "Neil Gaiman and Roger Avary", FILM),
    ("Who directed the 2007 film Beowulf?", "Robert Zemeckis directed Beowulf.", FILM),
    (FIGHTER, "Kamal Shalorus", FOUNDERS),
    (RULE, "Their rule lasted 275 years.", DYNASTY),
    ("Who did Peter O'Meara play?", "Peter O'Meara played Norman Dike.", SERIES),
    (LEAD, "The Fantastic The", ALIAS),
    (RETAILER, "Target Corporation", RETAILERS),
    # The answer capitalises what the source writes in lower case: no name of the source is the answer's.
    ("Which corpus was BERT pre-trained on?", "Books Corpus", BOOKS),
]


@pytest.mark.parametrize(("question", "answer", "sources"), WRONG)
def test_a_wrong_relation_between_words_that_stand_together_is_not_grounded(
    question: str, answer: str, sources: list[str]
) -> None:
    verdict = GroundednessChecker().check(answer, sources, question=question)
    assert not verdict.is_grounded and verdict.issues


@pytest.mark.parametrize(("question", "answer", "sources"), RIGHT)
def test_the_right_relation_is_grounded(question: str, answer: str, sources: list[str]) -> None:
    verdict = GroundednessChecker().check(answer, sources, question=question)
    assert verdict.is_grounded, verdict.issues


def test_a_both_claim_said_otherwise_in_the_sources_goes_to_the_verifier() -> None:
    # "a genus in the poppy family" is a plant to a reader: the word rule defers to a capable model.
    sources = ["Calochone is a genus of flowering plants. Adlumia is a genus in the poppy family."]
    question, answer = "Are Calochone and Adlumia both plants?", "Yes, both Calochone and Adlumia are plants."
    assert not GroundednessChecker().check(answer, sources, question=question).is_grounded
    verified = GroundednessChecker(verifier=lambda answer, sources: "GROUNDED: YES")
    assert verified.check(answer, sources, question=question).is_grounded


def test_right_answers_from_real_papers_keep_their_mark(pdfs: Path) -> None:
    """The rules must not cost a real chat its right answers: every answerable PDF question of the labelled
    answerability set, answered with its evidence span as written in the paper (bare, and as a cited
    sentence), checked against the paper's text around it."""
    records = [json.loads(line) for line in ANSWERABILITY.read_text(encoding="utf-8").splitlines()]
    texts: dict[str, str] = {}
    checked = rejected = 0
    for record in records:
        if not record["answerable"] or record["corpus"] != "pdfs":
            continue
        if record["document"] not in texts:
            pages = PdfReader(pdfs / record["document"]).pages
            texts[record["document"]] = " ".join(" ".join(page.extract_text() or "" for page in pages).split())
        text, evidence = texts[record["document"]], " ".join(record["evidence"].split())
        at = text.find(evidence)
        if at < 0:
            continue
        source = text[max(0, at - 700) : at + len(evidence) + 700]
        for answer in (evidence, f"{evidence[0].upper()}{evidence[1:]} [Source 1]."):
            checked += 1
            rejected += not GroundednessChecker().check(answer, [source], question=record["question"]).is_grounded
    # Two questions (4 of the 68 checks) fail on the word check alone, as they did before the relation rules,
    # because the answer stands in a sentence naming none of the question's terms: "bigram hashing and TF-IDF
    # matching" (a39), and the FAA notice's cost row "1 work-hour × $85 per hour = $85" for "What hourly labor
    # rate …" (a107). The held-out split test2 (a146–a205) added five more of that shape (10 of its 40 checks):
    # four answers in Form 1040NR's interleaved columns, whose extracted sentences mix other columns' words
    # (a146, a152, a154, a158), and the IRS manual's cut-off time glued to the sentence before it (a180).
    # The held-out split test3 (a206–a265; its scans have no text layer here) added two more (4 of its 24
    # checks): totals that stand in the NICS table as a bare number at a row's end (a208, a210).
    # The held-out split test4 (a266–a317; its OCR'd excerpt has a garbled text layer here) added two more (4 of
    # its 8 checks), not looked into: test4 is held out.
    # A new rejection of a right answer fails here.
    assert checked >= 146 and rejected <= 22

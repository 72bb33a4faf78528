"""Running headers and footers of real PDFs (built here, and the shared corpus) are kept only where they first
appear; body text, lines on few pages, section headings and short documents are left whole."""

from __future__ import annotations

from pathlib import Path
from string import ascii_lowercase, ascii_uppercase

from backend.ingest.loaders import load_document
from backend.models import LoadedDocument
from tests.support import pdf_files

_BODY = [
    "Axolotls regrow whole limbs within weeks.", "Their hearts repair themselves without scars.",
    "Lake Xochimilco is their only wild home.", "Salamanders of other kinds regrow less.",
    "Regrowth slows as the animals age.", "Researchers map the genes that drive it.",
    "Frogs lose the ability after metamorphosis.", "Zebrafish regrow fins and heart muscle.",
]


def _body(page: int, lines: int = 3) -> list[str]:
    """Lines of text of their own on each page (no numbers: a number could follow the pages)."""
    return [
        f"{_BODY[(page + i) % len(_BODY)]} Case {ascii_uppercase[page]}{ascii_lowercase[i]}."
        for i in range(lines)
    ]


def _lines(document: LoadedDocument) -> dict[int, list[str]]:
    return {page.number: page.text.split("\n") for page in document.pages}


def _report(pages: int, top: list[str], bottom: list[str]) -> bytes:
    """A report of ``pages`` pages, each with ``top`` lines, its own body and ``bottom`` lines; "{n}" in
    either is the page's number, "{journal_page}" its number in a journal where it starts on page 47699."""
    return pdf_files.pdf([
        [line.format(n=n, journal_page=47698 + n) for line in top] + _body(n)
        + [line.format(n=n) for line in bottom]
        for n in range(1, pages + 1)
    ])


def test_running_headers_and_page_numbers_are_kept_only_on_their_first_page() -> None:
    pdf = _report(6, ["Axolotl Quarterly, Vol. 12", "CONFIDENTIAL"], ["Page {n} of 6"])

    lines = _lines(load_document("report.pdf", pdf))

    assert lines[1][:2] == ["Axolotl Quarterly, Vol. 12", "CONFIDENTIAL"] and lines[1][-1] == "Page 1 of 6"
    for number in range(2, 7):
        assert lines[number] == _body(number)


def test_a_page_number_with_an_offset_is_running() -> None:
    """A journal's page numbers (47699, 47700, …) are the PDF's page numbers plus an offset."""
    pdf = _report(5, ["{journal_page} Federal Register / Vol. 85, No. 152"], ["- {n} -"])

    lines = _lines(load_document("register.pdf", pdf))

    assert lines[1][0] == "47699 Federal Register / Vol. 85, No. 152" and lines[1][-1] == "- 1 -"
    assert all(len(lines[number]) == 3 for number in range(2, 6))


def test_headers_alternating_between_left_and_right_pages_are_running() -> None:
    pdf = pdf_files.pdf([
        ["J. Aligon et al." if n % 2 else "Summaries of OLAP query logs", *_body(n)] for n in range(1, 9)
    ])

    lines = _lines(load_document("paper.pdf", pdf))

    assert lines[1][0] == "J. Aligon et al." and lines[2][0] == "Summaries of OLAP query logs"
    assert all(lines[number] == _body(number) for number in range(3, 9))


def test_a_books_page_headers_changing_with_its_sections_are_kept_once_a_section() -> None:
    """Each section's header runs on only three of twelve pages, but all of them number the pages."""
    sections = ["1.1. AXOLOTLS", "1.2. SALAMANDERS", "2.1. NEWTS", "2.2. FROGS"]
    pdf = pdf_files.pdf([[f"{n + 10} {sections[(n - 1) // 3]}", *_body(n)] for n in range(1, 13)])

    lines = _lines(load_document("book.pdf", pdf))

    firsts = (1, 4, 7, 10)
    assert [lines[number][0] for number in firsts] == [f"{n + 10} {sections[(n - 1) // 3]}" for n in firsts]
    assert all(lines[number] == _body(number) for number in range(1, 13) if number % 3 != 1)


def test_a_number_following_the_pages_on_two_pages_only_stays() -> None:
    pdf = pdf_files.pdf([
        [*_body(n), *([f"See table {n} below."] if n in (3, 5) else []), f"Page {n}"] for n in range(1, 9)
    ])

    lines = _lines(load_document("report.pdf", pdf))

    assert lines[3][-1] == "See table 3 below." and lines[5][-1] == "See table 5 below."
    assert lines[1][-1] == "Page 1" and all(lines[number] == _body(number) for number in (2, 4, 6, 7, 8))


def test_a_number_near_the_edge_of_a_page_numbered_with_bare_numbers_stays() -> None:
    """The pages end in their bare numbers ("4"): a table's "1995" just above one, read as "#" too, stays."""
    pdf = pdf_files.pdf([
        [*_body(n), *(["Founded in", "1995"] if n == 4 else []), str(n)] for n in range(1, 7)
    ])

    lines = _lines(load_document("report.pdf", pdf))

    assert lines[4] == [*_body(4), "Founded in", "1995"]
    assert lines[1][-1] == "1" and all(lines[number] == _body(number) for number in (2, 3, 5, 6))


def test_a_year_atop_a_page_does_not_stop_bare_page_numbers_from_running() -> None:
    """A page begins with a year ("2019"), read as "#" like the pages' bare numbers ("5"): it is passed over as
    not numbering its page, and stays."""
    pdf = pdf_files.pdf([[*(["2019"] if n == 3 else []), *_body(n), str(n)] for n in range(1, 7)])

    lines = _lines(load_document("report.pdf", pdf))

    assert lines[3] == ["2019", *_body(3)]
    assert lines[1][-1] == "1" and all(lines[number] == _body(number) for number in (2, 4, 5, 6))


def test_a_year_heading_every_page_and_bare_page_numbers_both_run() -> None:
    """Either line read as "#", at either edge: the year the same on every page, the numbers following them."""
    for year_on_top in (True, False):
        pdf = pdf_files.pdf([
            ["2019", *_body(n), str(n)] if year_on_top else [str(n), *_body(n), "2019"] for n in range(1, 7)
        ])

        lines = _lines(load_document("report.pdf", pdf))

        assert set(lines[1]) == {"2019", "1", *_body(1)}
        assert all(lines[number] == _body(number) for number in range(2, 7)), year_on_top


def test_a_line_like_a_running_header_but_with_other_numbers_stays() -> None:
    """Every page is headed "Axolotl Survey 2024"; one ends naming the survey before it, the same but its year."""
    pdf = pdf_files.pdf([
        ["Axolotl Survey 2024", *_body(n), *(["Axolotl Survey 2023"] if n == 4 else [])] for n in range(1, 7)
    ])

    lines = _lines(load_document("survey.pdf", pdf))

    assert lines[4] == [*_body(4), "Axolotl Survey 2023"]
    assert lines[1][0] == "Axolotl Survey 2024" and all(lines[n] == _body(n) for n in (2, 3, 5, 6))


def test_a_line_on_few_pages_stays() -> None:
    pdf = pdf_files.pdf([[*_body(n), "Draft" if n in (2, 5) else "Final"] for n in range(1, 9)])

    lines = _lines(load_document("report.pdf", pdf))

    assert lines[5][-1] == "Draft"
    assert [lines[number][-1] for number in range(1, 9)].count("Final") == 1


def test_a_section_heading_repeated_on_its_pages_stays() -> None:
    """"Exhibit 2" heads each page of exhibit 2: its number names the section, not the page."""
    pdf = pdf_files.pdf([[f"Exhibit {(n + 2) // 3}", *_body(n)] for n in range(1, 10)])

    lines = _lines(load_document("manual.pdf", pdf))

    assert [lines[number][0] for number in range(1, 10)] == [f"Exhibit {(n + 2) // 3}" for n in range(1, 10)]


def test_numbered_body_lines_at_the_top_of_pages_stay() -> None:
    """List items numbered (1), (2), … start several pages: their numbers follow the pages' on half of them
    only."""
    items = [1, 2, 3, 5, 7, 9]
    pdf = pdf_files.pdf([
        [f"({item}) In the Operating Procedures chapter,", *_body(n)] for n, item in enumerate(items, start=1)
    ])

    lines = _lines(load_document("rule.pdf", pdf))

    assert [lines[number][0] for number in range(1, 7)] == [
        f"({item}) In the Operating Procedures chapter," for item in items
    ]


def test_a_line_repeated_in_the_middle_of_pages_stays() -> None:
    middle = "See the table below."
    pdf = pdf_files.pdf([[*_body(n), middle, *_body(n + 10)] for n in range(1, 5)])

    document = load_document("notes.pdf", pdf)

    assert all(middle in page.text for page in document.pages)


def test_a_short_document_is_left_whole() -> None:
    pdf = _report(3, ["Axolotl Quarterly"], ["Page {n} of 3"])

    lines = _lines(load_document("short.pdf", pdf))

    assert all(lines[number][0] == "Axolotl Quarterly" for number in range(1, 4))


def test_the_proof_notes_of_the_shared_irs_instructions_go_but_its_text_stays(pdfs: Path) -> None:
    document = load_document("i1040nr.pdf", (pdfs / "long_us_irs_i1040nr_50p.pdf").read_bytes())

    text = "\n".join(page.text for page in document.pages)
    # Once in the instructions, once in the publication printed after them (its first page begins otherwise).
    assert text.count("The type and rule above prints on all proofs") == 2
    assert text.count("of 48 Instructions for Form 1040NR") == 1
    assert "Instructions for Form 1040NR" in document.pages[0].text and "tax treaty" in text

"""The sentences the answerability decision reads: prose at its full stops, line-structured text at its
lines."""

from backend.rag.passage_sentences import passage_sentences


def test_table_rows_are_sentences_of_their_own():
    # A layoff report's rows (after California's WARN report), one wrapped onto a second line.
    table = ("Notice Date Effective Company City No. Of Employees\n"
             "09/15/2015 07/06/2015 KLA-Tencor Corporation Milpitas 213\nLayoff Permanent\n"
             "09/04/2015 07/06/2015 Bridgepoint Education, Inc. San Diego 15 Layoff Permanent")
    assert passage_sentences(table) == [
        "Notice Date Effective Company City No. Of Employees",
        "09/15/2015 07/06/2015 KLA-Tencor Corporation Milpitas 213\nLayoff Permanent",
        "09/04/2015 07/06/2015 Bridgepoint Education, Inc. San Diego 15 Layoff Permanent",
    ]


def test_list_items_after_a_dash_or_a_number_in_brackets_or_a_letter_are_sentences():
    rules = ("The rules to enforce include the following ones:\n"
             "– Human Resources can see the unmasked TAX_ID of the employees.\n"
             "– Managers see a masked version of TAX_ID with the first five characters replaced with\n"
             "the X character.\n"
             "(2) Requests are sent weekly.\n"
             "a. Weekly cut-off time for requests is 5:00 pm Wednesday ET.")
    assert passage_sentences(rules) == [
        "The rules to enforce include the following ones:",
        "– Human Resources can see the unmasked TAX_ID of the employees.",
        ("– Managers see a masked version of TAX_ID with the first five characters replaced with\n"
         "the X character."),
        "(2) Requests are sent weekly.",
        "a. Weekly cut-off time for requests is 5:00 pm Wednesday ET.",
    ]


def test_hard_wrapped_prose_is_not_broken_at_its_lines():
    prose = ("Fifty-one individuals were randomized to\n140 mg of the drug or placebo, and\n"
             "43 completed the treatment phase. The plasma concentration fell.")
    assert passage_sentences(prose) == [
        ("Fifty-one individuals were randomized to\n140 mg of the drug or placebo, and\n"
         "43 completed the treatment phase."),
        "The plasma concentration fell.",
    ]

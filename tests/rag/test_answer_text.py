from backend.rag.answer_text import LOOP_WORDS, drop_repeated_sentences, loop_start, strip_question_echo, tidy


def test_a_leading_echo_of_the_prompts_question_and_answer_labels_is_removed():
    assert strip_question_echo("Question: How many pairs? Answer: 107,785 pairs [Source 1].") == (
        "107,785 pairs [Source 1]."
    )
    assert strip_question_echo("The question was hard. Answer: yes.") == "The question was hard. Answer: yes."


def test_a_sentence_said_again_is_left_out_whatever_its_citation():
    looping = "It measures exact matches [Source 1]. It measures exact matches [Source 2]. F1 is softer [Source 1]."
    assert drop_repeated_sentences(looping) == "It measures exact matches [Source 1]. F1 is softer [Source 1]."


def test_an_answer_without_repeats_keeps_its_layout():
    listed = "Two reasons:\n- cost [Source 1]\n- speed [Source 2]"
    assert drop_repeated_sentences(listed) == listed
    assert tidy(f"  {listed}\n") == listed


ROUND = "Axolotls need cool water between 16 and 18 degrees [Source 1]. They eat worms and pellets [Source 2]. "


def test_a_repeated_round_of_sentences_is_cut_where_it_starts_again():
    looping = ROUND * 4
    assert looping[: loop_start(looping)] == ROUND


def test_a_list_cycling_through_its_items_is_cut_before_the_item_marker_of_the_next_round():
    items = ("Cost [Source 1]", "Speed [Source 2]", "Size [Source 1]")
    listed = "Reasons:\n" + "".join(f"{n + 1}. {items[n % 3]}\n" for n in range(30))  # numbers go on, items cycle
    assert listed[: loop_start(listed)] == "Reasons:\n1. Cost [Source 1]\n2. Speed [Source 2]\n3. Size [Source 1]"
    bulleted = "- water\n- food\n" * 10
    assert bulleted[: loop_start(bulleted)] == "- water\n- food"


def test_one_word_said_over_and_over_is_a_loop():
    assert loop_start("The answer is " + "very " * 40) == len("The answer is very ")


def test_an_answer_that_does_not_repeat_a_long_run_is_left_alone():
    assert loop_start(ROUND) is None
    # Shared phrases shorter than LOOP_WORDS words are ordinary writing.
    varied = "According to the report, the revenue rose. According to the report, the costs fell."
    assert loop_start(varied) is None
    by_year = " ".join(f"In {year} the rate was {year % 7}% [Source 1]." for year in range(2000, 2000 + LOOP_WORDS))
    assert loop_start(by_year) is None  # one template, other numbers: a list, not a loop

from backend.rag.answer_text import drop_repeated_sentences, strip_question_echo, tidy


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

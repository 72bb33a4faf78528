"""Question shapes, key terms, abbreviations and answer candidates: plain text in, no model."""

import pytest

from backend.rag.answer_type import (
    abbreviations,
    carries,
    expected_answer_type,
    holds_answer,
    key_terms,
    question_parts,
    text_terms,
    with_closed_compounds,
)


@pytest.mark.parametrize(("question", "kind"), [
    ("Who funded the research behind BERT?", "person"),
    ("Whose idea was the masked language model?", "person"),
    ("Which company sponsored the trial?", "person"),
    ("When was the dataset released?", "time"),
    ("In what year did the trial end?", "time"),
    ("Where were the crowdworkers located?", "place"),
    ("Which Chinese cities were studied?", "place"),
    ("How many layers does BERT-Large have?", "quantity"),
    ("How much were the crowdworkers paid?", "quantity"),
    ("How long did pre-training take?", "quantity"),
    ("In how many subjects was it replicated?", "quantity"),
    ("What percentage of tokens are masked?", "quantity"),
    ("What was the maximum daily dose of topiramate?", "quantity"),
    ("and when did it start?", "time"),
    ("Over what period were the news articles collected?", "time"),  # a lead-in, and "period" asks a time
    ("When is the deadline for comments?", "time"),
    ("What is the overall recall of the system?", "quantity"),  # a measure is a number
    ("What precision does the NE tagger reach?", "quantity"),
    # Contact strings are typed like dates.
    ("What's the phone number for the BMF Database Administrators?", "phone"),
    ("What is the fax number of the office?", "phone"),
    ("What email address should comments go to?", "email"),
    ("What is the e-mail of the editor?", "email"),
    ("What is the website of the IRS?", "web"),
    ("What is the mailing address of Linn Electronics?", "address"),
    # A question after a sentence of context is read alone.
    ("I'm a teacher. How much of what I spend on supplies can I deduct?", "quantity"),
    ("I had no wages. When is my return due?", "time"),
    # A full stop inside the question (an abbreviation, a decimal) ends no sentence of it.
    ("Who is Dr. Smith?", "person"),
    ("How many patients were in the U.S. trial?", "quantity"),
    ("How many mg is 2.5 ml?", "quantity"),
    # A contact word that does not head its phrase, or is made something else, asks for no contact string.
    ("What does the address bus do?", "unknown"),
    ("What is the IP address of the server?", "unknown"),
    ("What is the phone battery life?", "unknown"),
    ("Which email client is used?", "unknown"),
    ("What is the website about?", "unknown"),
    # Shapes that promise no type: only the key terms decide.
    ("What does the Document Retriever use?", "unknown"),
    ("Which corpora were used to pre-train BERT?", "unknown"),
    ("Why does the model fail?", "unknown"),
    ("Is BERT bidirectional?", "unknown"),
    ("Combien de couches a BERT ?", "unknown"),
    ("BERTには何層ありますか？", "unknown"),
])
def test_the_question_shape_gives_the_answer_type(question, kind):
    assert expected_answer_type(question) == kind


def test_key_terms_drop_the_question_frame_and_function_words():
    assert key_terms("How many layers does BERT-Large have?") == {"layer", "bert", "larg"}
    assert key_terms("How large is the vocabulary?") == {"vocabulari"}
    assert key_terms("What dose of bezafibrate did the patients receive in the study?") == {
        "dose", "bezafibr", "patient", "receiv"}
    assert key_terms("How many?") == frozenset()
    # The answer kind's own noun is frame: "The FAA must receive comments … by September 21, 2020." answers
    # without saying "deadline"; "We collected their articles over two months" without "period".
    assert key_terms("When is the deadline for comments?") == {"comment"}
    assert key_terms("Over what period were the news articles collected?") == {"news", "collect"}
    # "stand for" asks for a long form; the definition "… augmentation system (MCAS)" never says "stand".
    assert key_terms("What does MCAS stand for?") == {"mcas"}
    assert key_terms("What is BERT short for?") == {"bert"}
    # A frame word capitalised inside the question is part of a name, and the name is the topic: DrQA's
    # "Document Reader" is not any reader. In a question in title case, capitals name nothing.
    assert key_terms("How many GPUs were used to train the Document Reader?") == {
        "gpus", "train", "document", "reader"}
    assert key_terms("How many GPUs were used to train the document reader?") == {"gpus", "train", "reader"}
    assert key_terms("What Is The Main Idea Of The Paper?") == frozenset()


def test_a_hyphenated_word_and_its_closed_spelling_are_one_word():
    # A short lower-case prefix of the question's is closed up; a longer or capitalised part stays a term.
    assert key_terms("How many years of data can be viewed on-line?") == {"data", "view", "onlin"}
    assert key_terms("Which agencies co-operate?") == key_terms("Which agencies cooperate?")
    assert key_terms("How many COVID-19 cases were there?") == {"covid", "19", "case"}
    assert key_terms("Which T-cell receptors bind?") == {"cell", "receptor", "bind"}
    # The text's hyphenated words also stand closed up.
    assert with_closed_compounds("data are in on-line status") == "data are in on-line status online"
    assert carries("onlin", text_terms(with_closed_compounds("in on-line status")), "in on-line status")


def test_a_frame_word_is_frame_in_any_of_its_inflections():
    # "studied" is "study", "located" is "location": "All 662 patients identified as sporadic cases of
    # Creutzfeldt-Jakob disease" answers without saying "studied", which the sentence before ("In this study")
    # would otherwise carry in its place.
    assert key_terms("How many patients with sporadic Creutzfeldt-Jakob disease were studied?") == {
        "patient", "sporad", "creutzfeldt", "jakob", "diseas"}
    assert key_terms("Where is New York University located?") == {"new", "york", "universiti"}
    assert key_terms("Which methods were described in the reports?") == {"method"}


def test_a_term_is_carried_by_its_stem_or_inside_glued_pdf_words():
    sentence = "We denote BERTLARGE (L=24) and the medullary cells."
    folded, terms = sentence.casefold(), text_terms(sentence)
    assert carries("medullari", terms, folded)  # "medullary" stems to the question's stem
    assert carries("larg", terms, folded)  # inside "bertlarge"
    assert not carries("gpus", terms, folded)
    assert not carries("ll", text_terms("all of it"), "all of it")  # a short stem only as a whole term


def test_abbreviations_map_to_their_long_form_with_one_level_of_nesting():
    text = ("Thymic epithelial cells (TEC) form the thymus. The mature medullary TEC (mTEC) turn over. "
            "Later the combined systems (TEC) were measured.")
    defined = abbreviations(text)
    assert defined["tec"] == "thymic epithelial cells"  # the first definition holds
    assert defined["mtec"].startswith("mature medullary tec") and defined["mtec"].endswith("thymic epithelial cells")


@pytest.mark.parametrize(("sentence", "kind", "holds"), [
    ("BERTLARGE (L=24, H=1024) has 340M parameters.", "quantity", True),
    ("We report F1 and EM on the dev set.", "quantity", False),  # the 1 of "F1" is no number
    ("Each pretraining took four days to complete.", "quantity", True),
    ("The dataset was released in June 2016.", "time", True),
    ("The dataset was released to the public.", "time", False),
    ("The paper was written by Jacob Devlin and colleagues.", "person", True),
    ("Transformers were trained on the data.", "person", False),  # a capital only at the sentence's start
    ("See Table 2 for the results.", "person", False),
    ("Workers came from the United States or Canada.", "place", True),
    ("Anything at all.", "unknown", True),
    # A section number opening the sentence is the layout's, not a quantity (Shinyama et al., NAACL 2006).
    ("4.1 Evaluation Method\nWe evaluated the obtained tables as follows.", "quantity", False),
    ("3 Implementation The overall process has 4 stages.", "quantity", True),  # "4" still counts
    ("3 Implementation The overall process is shown in Figure 4.", "quantity", False),  # a figure's number
    ("25 620 participants were randomly assigned.", "quantity", True),
    # A numbered paragraph or a heading's section number alone is the layout's.
    ("(2) BMFOL definer code B is used to restore tax modules.", "quantity", False),
    ("2.3.59.5", "quantity", False),
    # A number naming a form, a publication, an exhibit or a line, or a heading's revision date, answers
    # nothing.
    ("See Pub. 519 and Form 8854, line 47.", "quantity", False),
    ("Exhibit 2.3.59-56 (01-19-2021) Command Code BMFOL Display (Page 2)", "time", False),
    ("Command Codes BMFOL and BMFOR 2.3.59", "time", False),  # a section number is no date
    ("The form was revised on 01-19-2021.", "time", True),
    ("The meeting is on 12.03.2020.", "time", True),
    # Contact strings.
    ("Call 1-800-829-1040 or (215) 516-2000 for help.", "phone", True),
    ("Contact BMF Database Administrators.", "phone", False),
    ("Preparer Phone Number field, 10 positions.", "phone", False),
    ("Send comments to 9-ANM-ADComments@faa.gov by mail.", "email", True),
    ("Send comments by mail.", "email", False),
    ("Download the forms at www.irs.gov or at irs.gov/forms.", "web", True),
    ("Linn Electronics, Inc. 18720 Oxnard Street, Tarzana, CA 91356", "address", True),
    ("Linn Electronics makes the LinnSequencer.", "address", False),
])
def test_a_sentence_holds_an_answer_of_the_type_asked(sentence, kind, holds):
    assert holds_answer(sentence, kind, "question?") is holds


def test_a_count_is_not_a_share_or_a_sum_of_money():
    sentence = "The average cost of a data breach increased by 15% and resulted in a loss of $9.4 million."
    assert not holds_answer(sentence, "quantity", "How many data breaches happened?")
    assert holds_answer(sentence, "quantity", "How much did the cost of a data breach increase?")
    assert holds_answer("Almost 5000 data breaches occurred.", "quantity", "How many data breaches happened?")


@pytest.mark.parametrize(("sentence", "question", "holds"), [
    ("The airplane crashed six minutes after takeoff.", "How many minutes after takeoff did it crash?", True),
    ("The accident after takeoff resulted in 157 fatalities.", "How many minutes after takeoff did it crash?",
     False),
    ("The most recent seven years of data are on-line.", "How many years of data are on-line?", True),
    ("Each of the 100 sequences holds 32 tracks.", "How many years of data are on-line?", False),
    ("The sample included 4620 participants (mean age, 52.3 years).", "How old were the participants?", True),
    ("Patients aged 45 or older were enrolled.", "How old were the patients?", True),
    ("Fifty-one individuals were randomized (n=15).", "How old were the patients?", False),
    ("Fifty-one individuals were randomized (n=15).", "How many patients were randomized?", True),  # no unit
])
def test_a_number_of_the_unit_asked_for_answers(sentence, question, holds):
    assert holds_answer(sentence, "quantity", question) is holds


def test_a_candidate_the_question_already_contains_is_no_answer():
    assert not holds_answer("The story of Margaret is long.", "person", "Who was Margaret's brother?")
    assert holds_answer("Margaret's brother was Edgar.", "person", "Who was Margaret's brother?")
    assert not holds_answer("The leaderboard opened in 2018.", "time", "What happened in 2018?")


def test_a_compound_question_asks_each_of_its_parts():
    assert question_parts("Where do axolotls live and what do they eat?") == [
        "Where do axolotls live", "what do they eat?"]
    assert question_parts("What do salt and pepper add?") == ["What do salt and pepper add?"]

"""The garbage rule on its own, with the real bundled lexicon."""

from __future__ import annotations

import pytest

from backend.rag.garbage import (
    RANDOM_LETTER_BITS,
    CharTrigramModel,
    GarbageDetector,
    WordKind,
    bundled_lexicon,
    cycle_unit,
)


@pytest.fixture(scope="module")
def garbage():
    return GarbageDetector.bundled()


def test_the_bundled_lexicon_is_the_embedders_whole_words():
    lexicon = bundled_lexicon()
    assert 20_000 < len(lexicon) < 31_000
    assert {"the", "revenue", "gdp", "html", "por", "que"} <= lexicon
    assert not any(word.startswith(("##", "[")) for word in lexicon)


def test_the_character_model_finds_words_likelier_than_noise():
    model = CharTrigramModel(["the", "then", "there", "other", "mother", "rather", "these", "theme"])
    assert model.bits_per_letter("thether") < model.bits_per_letter("qzxvkj")
    assert model.bits_per_letter("other") < RANDOM_LETTER_BITS < model.bits_per_letter("xkqzvw")


@pytest.mark.parametrize(
    "words, cycles, unit",
    [
        (["the", "the", "the"], 3, ["the"]),
        (["ok", "go", "ok", "go", "ok", "go"], 3, ["ok", "go"]),
        (["bye", "bye"], 3, None),
        (["bye", "bye"], 2, ["bye"]),
        (["the", "the", "end"], 2, None),
        (["what"], 2, None),
        ([], 2, None),
    ],
)
def test_the_unit_a_message_repeats_is_found(words, cycles, unit):
    assert cycle_unit(words, cycles) == unit


@pytest.mark.parametrize(
    "word, kind",
    [
        ("revenue", WordKind.CONTENT),  # in the lexicon
        ("2019", WordKind.UNJUDGED),  # a number: content only beside words
        ("kündigungsrecht", WordKind.CONTENT),  # accents: another language, not a mashed keyboard
        ("pourquoi", WordKind.CONTENT),  # unknown but word-like
        ("spotify", WordKind.CONTENT),
        ("gdp", WordKind.CONTENT),
        ("rsvpx", WordKind.NOISE),
        ("xyz", WordKind.UNJUDGED),  # too short to judge
        ("asdkjhasd", WordKind.NOISE),
        ("qwerty", WordKind.NOISE),  # a run along one keyboard row
        ("sasassa", WordKind.NOISE),  # two keys drummed
        ("a8s7d6f", WordKind.NOISE),  # digits aside, a row run
    ],
)
def test_words_are_judged(garbage, word, kind):
    assert garbage.judge(word) is kind


@pytest.mark.parametrize(
    "message",
    [
        "asdkjhasd", "lkjlkj lkjlkj", "the the the", "The the THE.", "jeuvqzebe resaqirrf blprztfhk", "poiui tuiiuio",
        "{-}+-;!}[K*?)].-", "asdf!!@# 123", "opopo `\\ 313", "citi citi citi citi?", "aaaaaa",
        "orng orng", "J}=", "ajno >$ 5825", "jdkfsla",
    ],
)
def test_noise_is_garbage(garbage, message):
    assert garbage.is_garbage(message)


@pytest.mark.parametrize(
    "message",
    [
        "GDP?", "why?", "and 2019?", "what about 2020?", "who?", "¿por qué?", "Was ist das Kündigungsrecht?",
        "これは何ですか", "C++ vs C#?", "x-y", "e.g.", "what is 2+2", "what?!?!", "asdf table", "bye bye",
        "how do i pay my xfinity bill", "tell me about spotify",
    ],
)
def test_real_messages_are_not_garbage(garbage, message):
    assert not garbage.is_garbage(message)


def test_the_noise_threshold_is_a_setting(garbage):
    strict = GarbageDetector(bundled_lexicon(), noise_bits=2.0)
    assert not garbage.is_garbage("pourquoi") and strict.is_garbage("pourquoi")

"""The intent router with the real bundled MiniLM embedder (loaded once for the file)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from backend.config import Settings
from backend.embeddings import build_embedder
from backend.llm.base import ChatMessage, GenerationParams, LLMUnavailable
from backend.rag.garbage import GarbageDetector
from backend.rag.intent import (
    DEFAULT_EXEMPLARS,
    SEED_NEIGHBOURS,
    SEED_THRESHOLD,
    Intent,
    IntentRouter,
    RuleVerdict,
    check_hard_rules,
    parse_intent_answer,
)

PREVIOUS_TURN: list[ChatMessage] = [
    {"role": "user", "content": "What does the warranty cover?"},
    {"role": "assistant", "content": "The warranty covers manufacturing defects for two years [1]."},
]
DOCUMENT_QUESTION = "What is the termination notice period in the employment contract?"


@pytest.fixture(scope="session")
def embedder(tmp_path_factory):
    return build_embedder(Settings(data_dir=tmp_path_factory.mktemp("intent-embedder")))


@pytest.fixture(scope="session")
def garbage():
    return GarbageDetector.bundled()


@pytest.fixture(scope="session")
def router(embedder, garbage):
    return IntentRouter(embedder, garbage=garbage)


class FixedAnswerLLM:
    """Implements the LLM protocol by returning one fixed string. A legitimate stand-in: these tests are about how
    the router parses the LLM's answer and falls back when it is unusable, not about the model's judgement (that
    is measured by `axiom eval router --llm` and by the real-model test below)."""

    name = "fixed-answer"
    context_window = 2048

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.calls: list[tuple[Sequence[ChatMessage], GenerationParams]] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def stream(self, messages: Sequence[ChatMessage], params: GenerationParams, cancelled=None) -> Iterator[str]:
        yield self.complete(messages, params)

    def complete(self, messages: Sequence[ChatMessage], params: GenerationParams, cancelled=None) -> str:
        self.calls.append((messages, params))
        return self.answer


# --- L0 ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "   ", "a", "?", "\n\t"])
def test_empty_or_single_character_is_garbage(query, garbage):
    assert check_hard_rules(query, garbage) is RuleVerdict.GARBAGE


@pytest.mark.parametrize("query", ["123 456", "!!!???", "42", ":-) :-)", "3.14 + 2.71 = ?"])
def test_input_without_letters_is_garbage(query, garbage):
    assert check_hard_rules(query, garbage) is RuleVerdict.GARBAGE


@pytest.mark.parametrize("query", ["aaaaaaaaaa", "zzzzzzzzzzzzzzzzzzzz!", "hhhhhhhhhhhhhhhhhhhhhhhh h"])
def test_one_repeated_character_is_garbage(query, garbage):
    assert check_hard_rules(query, garbage) is RuleVerdict.GARBAGE


@pytest.mark.parametrize("query", ["of the and", "to be or not", "with them into", "but not for me"])
def test_short_input_of_only_stopwords_is_garbage(query, garbage):
    assert check_hard_rules(query, garbage) is RuleVerdict.GARBAGE


@pytest.mark.parametrize("query", ["it?", "that one", "what?", "which one", "why", "this", "what is it?"])
def test_bare_reference_is_recognised(query, garbage):
    assert check_hard_rules(query, garbage) is RuleVerdict.BARE_REFERENCE


@pytest.mark.parametrize(
    "query",
    [
        "hi", "ok", "more", "again", "thanks", "what is 2+2", "Was ist das Kündigungsrecht?", "of the contract",
        "aab", "where am i", "how are you doing", "what's up", "to be or not to be",
    ],
)
def test_real_messages_pass_the_rules(query, garbage):
    assert check_hard_rules(query, garbage) is RuleVerdict.PASSED


@pytest.mark.parametrize("query", ["asdkjhasd", "lkjlkj lkjlkj", "the the the", "Qwerty!!", "a$d#f%g^&*", "fxdymx zzkqv"])
def test_noise_is_garbage_with_or_without_a_previous_answer(router, query):
    """Issue 11: these went to greeting, question and clarify (follow-up after an answer, rewriting that answer)."""
    for history in ((), PREVIOUS_TURN):
        decision = router.classify(query, history)
        assert (decision.intent, decision.layer) == (Intent.GARBAGE, "rules")


@pytest.mark.parametrize(
    "query", ["GDP?", "why?", "and 2019?", "what about 2020?", "who?", "¿por qué?", "warum?", "C++?", "hi", "ok"]
)
def test_short_real_messages_are_never_garbage(router, query):
    for history in ((), PREVIOUS_TURN):
        assert router.classify(query, history).intent is not Intent.GARBAGE


@pytest.mark.parametrize("query", ["why?", "who?"])
def test_a_bare_question_word_after_an_answer_asks_about_it(router, query):
    assert router.classify(query, PREVIOUS_TURN).intent is Intent.FOLLOWUP


def test_rules_decide_garbage_before_the_exemplars(router):
    for query in ("!!!!", "of the and"):
        decision = router.classify(query)
        assert (decision.intent, decision.layer, decision.confidence) == (Intent.GARBAGE, "rules", 1.0)


def test_a_short_question_of_stopwords_reaches_the_exemplars(router):
    decision = router.classify("how are you")
    assert (decision.intent, decision.layer) == (Intent.GREETING, "exemplars")


def test_bare_reference_needs_clarification_without_history_and_is_a_followup_with_it(router):
    assert router.classify("that one?") == router.classify("it?")
    assert router.classify("it?").intent is Intent.CLARIFY_NEEDED
    assert router.classify("it?", PREVIOUS_TURN).intent is Intent.FOLLOWUP


# --- L1 ---------------------------------------------------------------------------------------------------------


def test_exemplars_recognise_greetings_and_gratitude(router):
    greeting = router.classify("hello there")
    assert (greeting.intent, greeting.layer) == (Intent.GREETING, "exemplars")
    assert greeting.confidence >= router.threshold
    assert router.classify("thanks a lot").intent is Intent.GRATITUDE
    assert router.classify("Thank you so much, that helped!").intent is Intent.GRATITUDE


def test_a_document_question_is_a_question(router):
    decision = router.classify(DOCUMENT_QUESTION)
    assert decision.intent is Intent.QUESTION


def test_off_topic_chit_chat_is_recognised(router):
    assert router.classify("what's the weather going to be like tomorrow?").intent is Intent.OFF_TOPIC
    assert router.classify("tell me a joke please").intent is Intent.OFF_TOPIC


def test_the_exemplar_table_can_say_question_confidently(embedder, garbage):
    router = IntentRouter(embedder, threshold=0.5, garbage=garbage)
    decision = router.classify("according to the handbook, how many vacation days do employees get")
    assert (decision.intent, decision.layer) == (Intent.QUESTION, "exemplars")


def test_followup_needs_a_previous_answer(router):
    without_history = router.classify("tell me more")
    assert (without_history.intent, without_history.layer) == (Intent.QUESTION, "exemplars")
    user_only: list[ChatMessage] = [{"role": "user", "content": "What does the warranty cover?"}]
    assert router.classify("tell me more", user_only).intent is Intent.QUESTION
    assert router.classify("tell me more", PREVIOUS_TURN).intent is Intent.FOLLOWUP
    assert router.classify("explain it like i'm five", PREVIOUS_TURN).intent is Intent.SIMPLIFY
    assert router.classify("give me more technical detail", PREVIOUS_TURN).intent is Intent.DEEPEN


def test_commands_are_recognised(router):
    assert router.classify("summarize the document").intent is Intent.COMMAND


def test_custom_exemplars_and_threshold_are_used(embedder):
    router = IntentRouter(embedder, threshold=0.99, exemplars={Intent.GREETING: ("hello",)})
    assert router.classify("hello").intent is Intent.GREETING
    decision = router.classify("hello there")  # close, but not 0.99
    assert (decision.intent, decision.layer) == (Intent.QUESTION, "default")


def test_one_neighbour_is_the_seed_nearest_exemplar_rule(embedder):
    seed = IntentRouter(embedder, threshold=SEED_THRESHOLD, neighbours=SEED_NEIGHBOURS).classify("hello")
    assert seed.intent is Intent.GREETING and seed.confidence == pytest.approx(1.0, abs=1e-3)
    averaged = IntentRouter(embedder, threshold=0.0, neighbours=2).classify("hello")
    assert averaged.intent is Intent.GREETING and 0.5 < averaged.confidence < seed.confidence


def test_invalid_matcher_settings_are_refused(embedder):
    with pytest.raises(ValueError):
        IntentRouter(embedder, exemplars={})
    with pytest.raises(ValueError):
        IntentRouter(embedder, neighbours=0)


def test_every_intent_the_exemplars_name_is_an_intent():
    assert set(DEFAULT_EXEMPLARS) <= set(Intent)


# --- L2 ---------------------------------------------------------------------------------------------------------

UNSURE = "could you look into the thing from before regarding lunch plans"  # matches no exemplar at 0.99


@pytest.mark.parametrize(
    "answer, expected",
    [
        ('{"intent": "off_topic"}', Intent.OFF_TOPIC),
        ('{"intent": " Greeting "}', Intent.GREETING),
        ('{"intent": "garbage"}', None),  # garbage is for the rules alone
        ('{"intent": "weather"}', None),
        ('{"label": "question"}', None),
        ('["question"]', None),
        ('{"intent": 3}', None),
        ("off_topic", None),
        ("", None),
    ],
)
def test_llm_answers_are_parsed_strictly(answer, expected):
    assert parse_intent_answer(answer) is expected


def test_llm_decides_when_exemplars_are_unsure(embedder):
    llm = FixedAnswerLLM('{"intent": "off_topic"}')
    decision = IntentRouter(embedder, llm, threshold=0.99).classify(UNSURE)
    assert (decision.intent, decision.layer, decision.confidence) == (Intent.OFF_TOPIC, "llm", 0.70)
    (messages, params), = llm.calls
    assert UNSURE in messages[-1]["content"]
    assert params.json_schema is not None and "garbage" not in params.json_schema["properties"]["intent"]["enum"]


def test_llm_is_not_asked_when_exemplars_are_sure(embedder):
    llm = FixedAnswerLLM('{"intent": "off_topic"}')
    assert IntentRouter(embedder, llm).classify("thank you").intent is Intent.GRATITUDE
    assert llm.calls == []


@pytest.mark.parametrize("answer", ["I think it is a question!", '{"intent": "banana"}', "{not json"])
def test_unusable_llm_answer_falls_back_to_question(embedder, answer):
    decision = IntentRouter(embedder, FixedAnswerLLM(answer), threshold=0.99).classify(UNSURE)
    assert (decision.intent, decision.layer) == (Intent.QUESTION, "default")


def test_llm_followup_without_history_is_a_question_and_sees_the_previous_answer_with_it(embedder):
    llm = FixedAnswerLLM('{"intent": "followup"}')
    router = IntentRouter(embedder, llm, threshold=0.99)
    assert router.classify(UNSURE).intent is Intent.QUESTION
    assert router.classify(UNSURE, PREVIOUS_TURN).intent is Intent.FOLLOWUP
    assert PREVIOUS_TURN[-1]["content"] in llm.calls[-1][0][-1]["content"]


def test_the_bundled_llm_answers_within_the_schema(embedder):
    """The real SmolLM2 GGUF under the intent schema: whatever label it picks, the grammar must make it parseable,
    so the decision comes from the LLM layer and never from the fallback."""
    llamacpp = pytest.importorskip("backend.llm.llamacpp")
    try:
        model_path = llamacpp.bundled_model_path()
    except LLMUnavailable as missing:
        pytest.skip(str(missing))
    llm = llamacpp.LlamaCppLLM(model_path, n_ctx=2048, n_threads=1, stall_timeout=60.0)
    decision = IntentRouter(embedder, llm, threshold=0.99).classify(UNSURE)
    assert decision.layer == "llm" and decision.intent in set(Intent) - {Intent.GARBAGE}


@pytest.mark.parametrize("mash", ["asdfgh", "qwerty", "hjkl", "lkjhg", "zxcvbn", "sdfgh", "xkcdxk"])
def test_keyboard_mashing_is_garbage(mash, garbage):
    assert check_hard_rules(mash, garbage) is RuleVerdict.GARBAGE


@pytest.mark.parametrize("word", ["html", "pdf", "rhythm", "summary", "revenue", "asdf table"])
def test_short_acronyms_and_real_words_are_not_mashing(word, garbage):
    assert check_hard_rules(word, garbage) is not RuleVerdict.GARBAGE

"""Decides what a chat message asks for before any retrieval runs: the seed's three-layer router (§3-4).

L0 ``rules``: deterministic checks for input that cannot be a request (noise: empty, no letters, keyboard mashes,
random letters, a word said over and over, symbol runs, see backend/rag/garbage.py; a few stopwords that ask
nothing) and for bare references ("it?", "that one") that need the conversation to mean anything.
L1 ``exemplars``: each intent is scored by the cosine similarity (bundled embedding model) of its ``neighbours``
hand-written exemplars nearest the message; the best intent is taken when its score reaches ``threshold``.
L2 ``llm``: when L1 is unsure and an LLM is given, the LLM picks an intent under a JSON schema.
``default``: anything still undecided is a ``question``, and so is an unusable LLM answer. Chit-chat sent to
retrieval costs one search that finds nothing; a document question turned away costs the user an answer.

followup, simplify and deepen rework the previous answer; with no earlier assistant message there is nothing to
rework, so the router returns ``question`` for them (the pipeline would fall through to RAG anyway, seed §4).
A bare reference with no earlier answer is ``clarify_needed``; after an answer it is a ``followup``.

The seed's L1 rule is the single nearest exemplar at similarity 0.85 (``SEED_THRESHOLD``, ``SEED_NEIGHBOURS``),
still available by passing those values. With all-MiniLM-L6-v2 almost no real message comes that close to an
exemplar, so on CLINC150's test split it recognises 17% of greetings and 5% of chit-chat. The defaults are the
setting that scored best on CLINC150's validation split (``axiom eval router``): each intent scored by the mean of
its two nearest exemplars, trusted from 0.325 (test: 92% of greetings, 93% of thanks, 85% of chit-chat and device
requests, 95% of in-domain questions).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Literal

import numpy as np

from backend.embeddings import Embedder
from backend.llm.base import LLM, ChatMessage, GenerationParams, LLMUnavailable
from backend.rag.garbage import GarbageDetector
from backend.retrieval.tokenize import ENGLISH_STOPWORDS


class Intent(StrEnum):
    QUESTION = "question"
    COMMAND = "command"
    GREETING = "greeting"
    GRATITUDE = "gratitude"
    GARBAGE = "garbage"
    OFF_TOPIC = "off_topic"
    FOLLOWUP = "followup"
    SIMPLIFY = "simplify"
    DEEPEN = "deepen"
    CLARIFY_NEEDED = "clarify_needed"


Layer = Literal["rules", "exemplars", "llm", "default"]

# Intents that transform the previous answer and so mean nothing without one.
NEEDS_PREVIOUS_ANSWER = frozenset({Intent.FOLLOWUP, Intent.SIMPLIFY, Intent.DEEPEN})

SEED_THRESHOLD = 0.85
SEED_NEIGHBOURS = 1
DEFAULT_THRESHOLD = 0.325
DEFAULT_NEIGHBOURS = 2
RULE_CONFIDENCE = 1.0
LLM_CONFIDENCE = 0.70  # seed §3: an LLM verdict is trusted less than a close exemplar
DEFAULT_CONFIDENCE = 0.5  # no evidence either way; "question" is chosen because it is the safe route


@dataclass(frozen=True, slots=True)
class IntentDecision:
    intent: Intent
    confidence: float
    layer: Layer


# --- L0: hard rules ---------------------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+")
_MAX_SHORT_WORDS = 5
_STOPWORD_SHARE = 0.9

# "more" and "again" alone are follow-up requests and "up" makes "what's up" a greeting, so none is a filler word here.
_FILLER_WORDS = ENGLISH_STOPWORDS - {"more", "again", "up"}
# A short run of stopwords that asks something ("where am i", "how are you doing") is a message, not garbage.
_QUESTION_WORDS = frozenset({"what", "why", "how", "which", "who", "whom", "whose", "where", "when"})

# Pronouns, demonstratives, bare question words and the verbs that link them ("what is it"): a message made only
# of these points at something unsaid.
_REFERENCE_WORDS = _QUESTION_WORDS | {
    "it", "its", "this", "that", "these", "those", "they", "them", "one", "ones", "other", "thing", "things",
    "stuff", "is", "are", "was", "were", "huh", "hmm", "and", "so", "the", "a", "an", "s",
}


class RuleVerdict(Enum):
    GARBAGE = "garbage"
    BARE_REFERENCE = "bare_reference"
    PASSED = "passed"


def check_hard_rules(query: str, garbage: GarbageDetector) -> RuleVerdict:
    """Noise first (backend/rag/garbage.py), so that noise made of reference words ("the the the") is never taken
    for a reference to the previous answer; then bare references; then a few stopwords that ask nothing."""
    if garbage.is_garbage(query):
        return RuleVerdict.GARBAGE
    words = _WORD.findall(unicodedata.normalize("NFKC", query).casefold())
    if all(word in _REFERENCE_WORDS for word in words):
        return RuleVerdict.BARE_REFERENCE
    fillers = sum(word in _FILLER_WORDS for word in words)
    asks = any(word in _QUESTION_WORDS for word in words)
    if len(words) <= _MAX_SHORT_WORDS and fillers / len(words) > _STOPWORD_SHARE and not asks:
        return RuleVerdict.GARBAGE
    return RuleVerdict.PASSED


# --- L1: nearest exemplar ---------------------------------------------------------------------------------------

# The seed's table (§3) plus off_topic (chit-chat about the assistant, the live state of the world, device actions)
# and question (requests for content a document holds), so that L1 can also be confident about those.
DEFAULT_EXEMPLARS: Mapping[Intent, tuple[str, ...]] = {
    Intent.GREETING: (
        "hi", "hello", "hey", "good morning", "sup", "howdy",
        "hello there", "hi there", "hey there", "good afternoon", "good evening", "greetings", "yo",
        "how are you", "how are you doing", "how's it going", "what's up", "nice to meet you", "aloha",
        "bye", "goodbye", "see you later", "talk to you later", "have a nice day", "good night", "adios",
        "i have to go now", "it was nice chatting with you", "catch you later",
    ),
    Intent.GRATITUDE: (
        "thanks", "thank you", "appreciate it", "thx", "ty", "cheers",
        "thanks a lot", "thank you so much", "many thanks", "thanks for your help", "that was helpful, thanks",
        "i appreciate your help", "great, thanks", "perfect, thank you", "got it, thanks", "ok thanks",
        "i'm grateful for your help", "you've been very helpful", "great answer", "that was a good answer",
        "i owe you one", "that's very kind of you", "gracias", "merci",
    ),
    Intent.FOLLOWUP: (
        "more", "tell me more", "continue", "elaborate", "what else",
        "go on", "keep going", "and then?", "anything else?", "can you expand on that", "say more about that",
    ),
    Intent.SIMPLIFY: (
        "explain simpler", "eli5", "dumb it down", "too complicated",
        "explain it like i'm five", "in simple terms please", "i don't understand, simpler please",
        "can you make that easier to understand", "in plain english",
    ),
    Intent.DEEPEN: (
        "go deeper", "more technical", "in depth", "dive deeper",
        "give me the technical details", "explain in more detail", "more detail please", "go into the specifics",
    ),
    Intent.COMMAND: (
        "summarize", "compare", "list all", "give me an overview",
        "summarize the document", "give me a summary of the file", "compare the two documents",
        "list all the key points", "list every requirement mentioned", "outline the main sections",
    ),
    Intent.OFF_TOPIC: (
        # chit-chat and questions about the assistant itself
        "tell me a joke", "say something funny", "tell me a fun fact", "what is the meaning of life",
        "what's your name", "how old are you", "are you a robot", "who made you", "where are you from",
        "who do you work for", "do you have any pets", "what are your hobbies", "what can you do",
        "what can i ask you", "do you like me", "i'm bored", "let's chat",
        # the live state of the world
        "what's the weather like today", "will it rain tomorrow", "what time is it", "what time is it in tokyo",
        "what's today's date", "who won the game last night", "what's the score of the match",
        "what's the latest news", "how's the traffic right now", "what's the stock price of apple",
        # actions on the user's devices, accounts and lists
        "set a timer for ten minutes", "wake me up at 7 am", "remind me to buy eggs", "play some music",
        "skip this song", "what song is this", "turn off the lights", "set the thermostat to 70",
        "call my mom", "text john that i'm running late", "share my location with sam", "where is my phone",
        "add milk to my shopping list", "what's on my to-do list", "what's on my calendar today",
        "order more paper towels", "where is my package", "get me an uber",
        # the assistant's own settings
        "speak slower", "change your voice", "talk to me in french", "reset to factory settings",
        "call me by a different name", "change your name to max",
        # general utilities
        "flip a coin", "roll a dice", "what is 15 times 12", "how many ounces are in a pound",
        "how do you spell necessary", "recommend a movie to watch",
    ),
    Intent.QUESTION: (
        "what does the document say about the refund policy", "what is the main finding of the paper",
        "according to the report, what was the revenue last year", "who is the author of this document",
        "how do i reset the device according to the manual", "what are the side effects listed",
        "what are the terms of the contract", "when does the agreement expire", "what is the penalty for late payment",
        "how much is the fee", "what are the requirements to apply", "what is the procedure for filing a claim",
        "explain the methodology used in the study", "what does section 3 cover", "what is the definition of liability",
        "how many employees does the company have", "what is the interest rate mentioned",
        "which chapter discusses safety", "why did the project fail", "what steps are needed to install it",
        "how long does the warranty last", "what is covered by the insurance policy", "what is the deadline",
        "how is the bonus calculated", "what ingredients are needed for the recipe",
        "how many vacation days do employees get", "what holidays does the company observe",
        "which band recorded the album", "what genre of music is the group known for",
        "who directed the film", "when was the composer born", "who won the championship in 1998",
        "in which city was the company founded", "what nationality was the painter",
        "what year did the war end", "what did the study conclude", "how does the engine work",
        "what are the opening hours listed", "what time does the event start according to the schedule",
        "what is my credit score on the report", "what were my transactions last month",
        "what is the balance on the statement", "what time does the flight depart according to the itinerary",
        "when is the next payday", "how do you say thank you in spanish", "how do i rent a car at the airport",
    ),
}


@dataclass(frozen=True, slots=True)
class ExemplarMatch:
    intent: Intent
    similarity: float  # mean cosine similarity of the intent's ``neighbours`` nearest exemplars


class ExemplarMatcher:
    """Embeds every exemplar once (one batch) and scores each intent by the mean cosine similarity of its
    ``neighbours`` exemplars nearest the query; the best-scoring intent wins.

    ``neighbours=1`` is the seed's nearest-exemplar rule. Averaging two is steadier: one exemplar that shares a
    word with the query ("what's the score of the match" for "what is my credit score") no longer decides alone.
    """

    def __init__(self, embedder: Embedder, exemplars: Mapping[Intent, Sequence[str]], neighbours: int) -> None:
        if neighbours < 1:
            raise ValueError("neighbours must be at least 1")
        texts = [text for group in exemplars.values() for text in group]
        if not texts:
            raise ValueError("the exemplar table is empty")
        self._embedder = embedder
        self._vectors = embedder.embed_documents(texts)  # rows are L2-normalised: dot product = cosine
        self._intents = [intent for intent, group in exemplars.items() if group]
        sizes = np.array([len(group) for group in exemplars.values() if group])
        # One row per intent holding the indices of its exemplars, padded to the largest group; scoring a query
        # is then a handful of array operations whatever the number of intents.
        columns = np.arange(sizes.max())
        self._present = columns < sizes[:, None]
        self._rows = np.where(self._present, np.cumsum(sizes)[:, None] - sizes[:, None] + columns, 0)
        self._neighbours = min(neighbours, int(sizes.max()))
        self._counts = np.minimum(sizes, neighbours)

    def best(self, query: str) -> ExemplarMatch:
        similarities = self._vectors @ self._embedder.embed_query(query)
        grouped = np.where(self._present, similarities[self._rows], -np.inf)
        nearest = -np.sort(-grouped, axis=1)[:, : self._neighbours]
        scores = np.where(np.isfinite(nearest), nearest, 0.0).sum(axis=1) / self._counts
        winner = int(np.argmax(scores))
        return ExemplarMatch(self._intents[winner], float(scores[winner]))


# --- L2: LLM ----------------------------------------------------------------------------------------------------

# garbage is left to the deterministic rules: a small model should not be able to reject a message outright.
_LLM_CHOICES = tuple(intent.value for intent in Intent if intent is not Intent.GARBAGE)
_INTENT_SCHEMA = {
    "type": "object",
    "properties": {"intent": {"type": "string", "enum": list(_LLM_CHOICES)}},
    "required": ["intent"],
}
_SYSTEM_PROMPT = """You label messages sent to an assistant that answers questions about the user's documents.
Reply with JSON {"intent": LABEL}. Labels:
question: asks for information that documents could contain
command: asks to summarize, compare or list the documents' content
greeting: hello, goodbye, how are you
gratitude: thanks, acknowledgement
off_topic: chit-chat, jokes, weather, news, sports, device actions, questions about the assistant itself
followup: wants more on the previous answer
simplify: wants the previous answer explained more simply
deepen: wants more technical detail on the previous answer
clarify_needed: too vague to act on"""
_PREVIOUS_ANSWER_CHARS = 300
_LLM_PARAMS = GenerationParams(max_tokens=24, temperature=0.0, json_schema=_INTENT_SCHEMA)


class LLMIntentClassifier:
    """Asks the LLM for one label. Returns None when the answer is not a usable label or the LLM is unavailable."""

    def __init__(self, llm: LLM) -> None:
        self._llm = llm

    def classify(self, query: str, previous_answer: str | None) -> Intent | None:
        context = f"Previous answer: {previous_answer[:_PREVIOUS_ANSWER_CHARS]}\n" if previous_answer else ""
        messages: list[ChatMessage] = [
            {"role": "system", "content": _SYSTEM_PROMPT},
            {"role": "user", "content": f"{context}Message: {query}"},
        ]
        try:
            answer = self._llm.complete(messages, _LLM_PARAMS)
        except LLMUnavailable:
            return None
        return parse_intent_answer(answer)


def parse_intent_answer(answer: str) -> Intent | None:
    try:
        label = json.loads(answer).get("intent")
    except (json.JSONDecodeError, AttributeError):
        return None
    if not isinstance(label, str) or label.strip().casefold() not in _LLM_CHOICES:
        return None
    return Intent(label.strip().casefold())


# --- the router -------------------------------------------------------------------------------------------------


class IntentRouter:
    """L0 → L1 → L2 → default, as the module docstring describes. Build once and share: construction embeds the
    exemplar table, and ``classify`` only reads it. A message's embedding goes through the shared embedder's
    cache, so dense retrieval of the same message does not embed it again."""

    def __init__(
        self,
        embedder: Embedder,
        llm: LLM | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        exemplars: Mapping[Intent, Sequence[str]] = DEFAULT_EXEMPLARS,
        neighbours: int = DEFAULT_NEIGHBOURS,
        garbage: GarbageDetector | None = None,
    ) -> None:
        self._garbage = garbage if garbage is not None else GarbageDetector.bundled()
        self._matcher = ExemplarMatcher(embedder, exemplars, neighbours)
        self._llm = LLMIntentClassifier(llm) if llm is not None else None
        self._threshold = threshold
        self._neighbours = neighbours

    @property
    def threshold(self) -> float:
        return self._threshold

    @property
    def neighbours(self) -> int:
        return self._neighbours

    @property
    def noise_bits(self) -> float:
        return self._garbage.noise_bits

    def classify(self, query: str, history: Sequence[ChatMessage] = ()) -> IntentDecision:
        """``history`` is the conversation before ``query``; only the last assistant message in it matters."""
        previous_answer = _last_assistant_message(history)
        verdict = check_hard_rules(query, self._garbage)
        if verdict is RuleVerdict.GARBAGE:
            return IntentDecision(Intent.GARBAGE, RULE_CONFIDENCE, "rules")
        if verdict is RuleVerdict.BARE_REFERENCE:
            intent = Intent.FOLLOWUP if previous_answer else Intent.CLARIFY_NEEDED
            return IntentDecision(intent, RULE_CONFIDENCE, "rules")

        match = self._matcher.best(query)
        if match.similarity >= self._threshold:
            return IntentDecision(_in_context(match.intent, previous_answer), match.similarity, "exemplars")

        if self._llm is not None:
            intent = self._llm.classify(query, previous_answer)
            if intent is not None:
                return IntentDecision(_in_context(intent, previous_answer), LLM_CONFIDENCE, "llm")
        return IntentDecision(Intent.QUESTION, DEFAULT_CONFIDENCE, "default")


def _last_assistant_message(history: Sequence[ChatMessage]) -> str | None:
    for message in reversed(history):
        if message["role"] == "assistant" and message["content"].strip():
            return message["content"]
    return None


def _in_context(intent: Intent, previous_answer: str | None) -> Intent:
    return Intent.QUESTION if intent in NEEDS_PREVIOUS_ANSWER and not previous_answer else intent

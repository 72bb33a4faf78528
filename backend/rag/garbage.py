"""Whether a chat message is noise rather than words: the router's garbage rule (seed §3, L0).

Noise is what a keyboard produces with no thought behind it: mashed keys ("asdkjhasd", "lkjlkj lkjlkj"), random
letters, one word or phrase over and over ("the the the"), runs of symbols. A message is garbage when it is empty,
has no letter, is one character repeated, repeats one word or phrase ``MIN_CYCLES`` times, or when its noise
outweighs its content, counted in characters:

- noise: a word of ``MIN_JUDGED_LETTERS`` letters or more that the lexicon does not know and that is a run of
  neighbouring keys, or made of one or two letters ("sasassa"), or that a character model of the lexicon's words explains no better than letters typed at
  random (``RANDOM_LETTER_BITS``, log2 26 bits a letter); and ``MIN_NOISE_SYMBOLS`` or more symbols inside the
  message (the "?!" that ends a message is punctuation, not noise).
- content: words the lexicon knows, numbers, words the model finds word-like, and words with accents or in
  another script (the model cannot judge them, and a mashed keyboard does not type them).
- neither: shorter unknown words ("gdp", "rsvp"), so a short real question is never noise.

The threshold is a property of random typing, not a number fitted to a data set: it is checked, with the rest, by
`axiom eval router` on CLINC150 and a generated noise set (backend/eval/garbage_set.py).

The lexicon is BERT's uncased WordPiece vocabulary (21.7k whole words, mostly English), which the bundled embedding
model already ships, so no word list is added to the install.
"""

from __future__ import annotations

import json
import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from enum import Enum

from backend.embeddings import minilm_tokenizer_path

RANDOM_LETTER_BITS = math.log2(len(string.ascii_lowercase))
MIN_CYCLES = 3
MIN_JUDGED_LETTERS = 4
MIN_NOISE_SYMBOLS = 3
_REPEATED_CHAR_SHARE = 0.9

_WORD = re.compile(r"[^\W_]+")
# Sentence punctuation that may open or close a real message ("¿por qué?", "what?!", "(page 3)."): not noise there.
_OUTER_PUNCTUATION = re.compile(r"^[\"'(¿¡]+|[\"'().,;:?!…]+$")
# Runs of neighbouring keys (either direction): a word drawn from one of them is someone mashing keys.
_KEYBOARD_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


class CharTrigramModel:
    """A character trigram model of words, interpolated with its bigram and unigram models (Witten-Bell: a context
    followed by many different letters leaves more probability to the lower orders). Words are modelled from a
    start marker to an end marker, so a word's ending is scored as well as its letters."""

    _START, _END = "^", "$"

    def __init__(self, words: Iterable[str]) -> None:
        self._counts: list[Counter[tuple[str, str]]] = [Counter(), Counter(), Counter()]
        for word in words:
            for context, letter in self._events(word):
                for order in range(3):
                    self._counts[order][context[len(context) - order :], letter] += 1
        self._totals: list[Counter[str]] = [Counter(), Counter(), Counter()]
        self._types: list[Counter[str]] = [Counter(), Counter(), Counter()]
        for order, counts in enumerate(self._counts):
            for (context, _), count in counts.items():
                self._totals[order][context] += count
                self._types[order][context] += 1
        self._alphabet = len({letter for _, letter in self._counts[0]}) + 1  # + one for letters never seen

    def _events(self, word: str) -> list[tuple[str, str]]:
        padded = self._START * 2 + word + self._END
        return [(padded[i - 2 : i], padded[i]) for i in range(2, len(padded))]

    def _probability(self, context: str, letter: str) -> float:
        probability = (self._counts[0]["", letter] + 1) / (self._totals[0][""] + self._alphabet)
        for order in (1, 2):
            history = context[len(context) - order :]
            total = self._totals[order][history]
            if total:
                types = self._types[order][history]
                probability = (self._counts[order][history, letter] + types * probability) / (total + types)
        return probability

    def bits_per_letter(self, word: str) -> float:
        """The mean surprise, in bits, of each letter of ``word`` and of its end."""
        events = self._events(word)
        return -sum(math.log2(self._probability(context, letter)) for context, letter in events) / len(events)


def bundled_lexicon() -> frozenset[str]:
    """The whole words of the bundled embedding model's WordPiece vocabulary (subword pieces and markers left out)."""
    vocabulary = json.loads(minilm_tokenizer_path().read_text(encoding="utf-8"))["model"]["vocab"]
    return frozenset(token for token in vocabulary if _WORD.fullmatch(token) and not token.isdigit())


class WordKind(Enum):
    CONTENT = "content"
    NOISE = "noise"
    UNJUDGED = "unjudged"


def _is_key_run(letters: str) -> bool:
    return any(letters in row or letters in row[::-1] for row in _KEYBOARD_ROWS)


def _is_two_key_drumming(letters: str) -> bool:
    # No word of five letters or more is spelt with two letters ("opopo", "aaaaaa"); a hand hitting two keys is.
    return len(letters) >= 5 and len(set(letters)) <= 2


def repeats_a_cycle(words: Sequence[str]) -> bool:
    """The words are one word or phrase said MIN_CYCLES times or more ("the the the", "ok go ok go ok go")."""
    return any(
        all(words[i] == words[i - period] for i in range(period, len(words)))
        for period in range(1, len(words) // MIN_CYCLES + 1)
    )


def _inner_symbols(text: str) -> int:
    inner = _OUTER_PUNCTUATION.sub("", text)
    return sum(not char.isalnum() and not char.isspace() for char in inner)


class GarbageDetector:
    """The garbage rule of the module docstring. Build once and share: construction trains the character model
    (a fraction of a second), ``is_garbage`` only reads it."""

    def __init__(self, lexicon: Collection[str], noise_bits: float = RANDOM_LETTER_BITS) -> None:
        self._lexicon = frozenset(lexicon)
        self._model = CharTrigramModel(word for word in self._lexicon if word.isascii() and word.isalpha())
        self.noise_bits = noise_bits

    @classmethod
    def bundled(cls, noise_bits: float = RANDOM_LETTER_BITS) -> GarbageDetector:
        return cls(bundled_lexicon(), noise_bits)

    def judge(self, word: str) -> WordKind:
        """What one casefolded word (letters and digits) brings to a message."""
        letters = "".join(char for char in word if char.isalpha())
        if not letters or word in self._lexicon or letters in self._lexicon or not letters.isascii():
            return WordKind.CONTENT
        if len(letters) < MIN_JUDGED_LETTERS:
            return WordKind.UNJUDGED
        if _is_key_run(letters) or _is_two_key_drumming(letters) or self._model.bits_per_letter(letters) > self.noise_bits:
            return WordKind.NOISE
        return WordKind.CONTENT

    def is_garbage(self, message: str) -> bool:
        text = unicodedata.normalize("NFKC", message).strip().casefold()
        if len(text) <= 1 or not any(char.isalpha() for char in text):
            return True
        visible = [char for char in text if not char.isspace()]
        if Counter(visible).most_common(1)[0][1] / len(visible) > _REPEATED_CHAR_SHARE:
            return True
        words = _WORD.findall(text)
        if repeats_a_cycle(words):
            return True
        symbols = _inner_symbols(text)
        noise = symbols if symbols >= MIN_NOISE_SYMBOLS else 0
        content = 0
        for word in words:
            kind = self.judge(word)
            if kind is WordKind.NOISE:
                noise += len(word)
            elif kind is WordKind.CONTENT:
                content += len(word)
        return noise > content

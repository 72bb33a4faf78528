"""Whether a chat message is noise rather than words: the router's garbage rule (seed §3, L0).

Noise is what a keyboard produces with no thought behind it: mashed keys ("asdkjhasd", "lkjlkj lkjlkj"), random
letters, one word or phrase over and over ("the the the"), runs of symbols. A message is garbage when it is empty,
has no letter, is one character repeated, repeats one word or phrase ``MIN_CYCLES`` times (twice when the lexicon
knows none of its words), or when its noise outweighs its content, counted in characters:

- noise: a word of ``MIN_JUDGED_LETTERS`` letters or more that the lexicon does not know and that is a run of
  neighbouring keys or five letters or more of the home or bottom row, or made of one or two letters ("sasassa"), or that a character model of the lexicon's words explains no better than letters typed at
  random (``RANDOM_LETTER_BITS``, log2 26 bits a letter); and the symbols inside the message when there are
  ``MIN_NOISE_SYMBOLS`` different ones, or two in a message with no word (the "?!" that ends a message is punctuation).
- content: words the lexicon knows, words the model finds word-like, and words with accents or in
  another script (the model cannot judge them, and a mashed keyboard does not type them).
- neither: numbers, single letters and shorter unknown words ("rsvp"), so a short real question is never noise.

The threshold is tied to random typing rather than fitted freely: `axiom eval router` tries a few margins around
it on CLINC150's validation split and a generated noise set (backend/eval/garbage_set.py), and reports the test
split.

The lexicon is BERT's uncased WordPiece vocabulary (21.7k whole words, mostly English), which the bundled embedding
model already ships, so no word list is added to the install.
"""

from __future__ import annotations

import functools
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
# A quarter of a bit a letter above random typing: the setting `axiom eval router` chose on CLINC150's validation
# split (fewest real queries called garbage among those catching 98% of the noise; docs/benchmarks.md).
DEFAULT_NOISE_BITS = RANDOM_LETTER_BITS + 0.25
MIN_CYCLES = 3
MIN_JUDGED_LETTERS = 4
MIN_NOISE_SYMBOLS = 3
_ONE_ROW_LETTERS = 5
_REPEATED_CHAR_SHARE = 0.9

_WORD = re.compile(r"[^\W_]+")
# Sentence punctuation that may open or close a real message ("¿por qué?", "what?!", "(page 3)."): not noise there.
_OUTER_PUNCTUATION = re.compile(r"^[\"'(¿¡]+|[\"'().,;:?!…]+$")
# Runs of neighbouring keys (either direction): a word drawn from one of them is someone mashing keys.
_KEYBOARD_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
# The top row holds four vowels and spells words in many languages ("pourquoi", "quiero"); the other two do not.
_VOWEL_POOR_ROWS = _KEYBOARD_ROWS[1:]


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


def _is_keyboard_mash(letters: str) -> bool:
    """A run of neighbouring keys ("asdf", "poiu"), or five letters or more all from the home or bottom row
    ("jdkfsla"): the few words those rows spell ("flask", "salad") are in the lexicon, checked first."""
    if any(letters in row or letters in row[::-1] for row in _KEYBOARD_ROWS):
        return True
    return len(letters) >= _ONE_ROW_LETTERS and any(set(letters) <= set(row) for row in _VOWEL_POOR_ROWS)


def _is_two_key_drumming(letters: str) -> bool:
    # No word of five letters or more is spelt with two letters ("opopo", "aaaaaa"); a hand hitting two keys is.
    return len(letters) >= 5 and len(set(letters)) <= 2


def cycle_unit(words: Sequence[str], cycles: int) -> Sequence[str] | None:
    """The word or phrase that ``words`` says ``cycles`` times or more ("the the the", "ok go ok go"), or None."""
    for period in range(1, len(words) // cycles + 1):
        if all(words[i] == words[i - period] for i in range(period, len(words))):
            return words[:period]
    return None


def _symbol_noise(text: str, wordless: bool) -> int:
    """The number of symbols inside ``text`` when they are noise: MIN_NOISE_SYMBOLS different ones ("a$d#f%g"), or
    two in a message with no word ("J}="); but "C++ vs C#?" and "state-of-the-art" are written that way."""
    symbols = [char for char in _OUTER_PUNCTUATION.sub("", text) if not char.isalnum() and not char.isspace()]
    kinds = len(set(symbols))
    return len(symbols) if kinds >= MIN_NOISE_SYMBOLS or (wordless and kinds >= 2) else 0


class GarbageDetector:
    """The garbage rule of the module docstring. Build once and share: construction trains the character model
    (a fraction of a second), ``is_garbage`` only reads it."""

    def __init__(self, lexicon: Collection[str], noise_bits: float = DEFAULT_NOISE_BITS) -> None:
        self._lexicon = frozenset(lexicon)
        self._model = CharTrigramModel(word for word in self._lexicon if word.isascii() and word.isalpha())
        self.noise_bits = noise_bits

    @classmethod
    def bundled(cls, noise_bits: float = DEFAULT_NOISE_BITS) -> GarbageDetector:
        """Built once per process and setting: it only reads after construction, and building it (~0.8 s) would
        otherwise be paid by every container, as each builds its own intent router."""
        return _bundled_detector(noise_bits)

    def judge(self, word: str) -> WordKind:
        """What one casefolded word (letters and digits) brings to a message."""
        letters = "".join(char for char in word if char.isalpha())
        if len(letters) <= 1:
            # A number says something only beside words ("and 2019?"), and one letter too little; the lexicon has
            # every letter.
            return WordKind.UNJUDGED
        if word in self._lexicon or letters in self._lexicon or not letters.isascii():
            return WordKind.CONTENT
        if len(letters) < MIN_JUDGED_LETTERS:
            return WordKind.UNJUDGED
        noisy = _is_keyboard_mash(letters) or _is_two_key_drumming(letters)
        if noisy or self._model.bits_per_letter(letters) > self.noise_bits:
            return WordKind.NOISE
        return WordKind.CONTENT

    def _repeats_itself(self, words: Sequence[str]) -> bool:
        """One word or phrase said MIN_CYCLES times, or said twice when the lexicon knows none of its words
        ("orng orng"; but "bye bye")."""
        if cycle_unit(words, MIN_CYCLES) is not None:
            return True
        unit = cycle_unit(words, 2)
        return unit is not None and not any(word in self._lexicon for word in unit)

    def is_garbage(self, message: str) -> bool:
        text = unicodedata.normalize("NFKC", message).strip().casefold()
        if len(text) <= 1 or not any(char.isalpha() for char in text):
            return True
        visible = [char for char in text if not char.isspace()]
        if Counter(visible).most_common(1)[0][1] / len(visible) > _REPEATED_CHAR_SHARE:
            return True
        words = _WORD.findall(text)
        if self._repeats_itself(words):
            return True
        noise = content = 0
        for word in words:
            kind = self.judge(word)
            if kind is WordKind.NOISE:
                noise += len(word)
            elif kind is WordKind.CONTENT:
                content += len(word)
        return noise + _symbol_noise(text, wordless=content == 0) > content


@functools.cache
def _bundled_detector(noise_bits: float) -> GarbageDetector:
    return GarbageDetector(bundled_lexicon(), noise_bits)

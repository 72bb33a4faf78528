"""A seeded set of noise messages for `axiom eval router`: what the router must send to the garbage reply.

Five kinds, equally many of each, every message made by a seeded generator so a split is the same on every run:

- keyboard: walks along a keyboard row, mostly to a neighbouring key, now and then jumping to another row
  ("asdkjhasd", "lkjlkj"); one to three such words.
- random_letters: one to three words of letters drawn uniformly.
- repeated_word: one word said three to six times ("the the the"), taken from the real messages of the split's
  CLINC150 queries, or a mashed word said two to four times ("lkjlkj lkjlkj").
- symbols: runs of punctuation and symbols with at most two letters or digits among them.
- mixed: a mashed or random word together with symbol runs and digits ("asdf!!@# 123").

Messages that are all symbols or digits are garbage by definition; they are in the set so the report covers what a
user may send, not only what is hard to tell.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass

KINDS = ("keyboard", "random_letters", "repeated_word", "symbols", "mixed")
_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_STEPS = (-2, -1, -1, 0, 1, 1, 2)  # mostly to a neighbouring key; a mashing hand also presses one key twice
_ROW_JUMP = 0.15
_SYMBOLS = "!@#$%^&*()_+-=[]{};:'\",.<>/?\\|`~"
_ENDINGS = ("", "", "", "?", "!", ".", "??")
_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class NoiseMessage:
    text: str
    kind: str


def _keyboard_word(rng: random.Random) -> str:
    row = rng.choice(_ROWS)
    key = rng.randrange(len(row))
    letters = []
    for _ in range(rng.randint(4, 12)):
        letters.append(row[key])
        if rng.random() < _ROW_JUMP:
            row = rng.choice(_ROWS)
        key = min(max(key + rng.choice(_STEPS), 0), len(row) - 1)
    return "".join(letters)


def _random_word(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 10)))


def _symbol_run(rng: random.Random) -> str:
    return "".join(rng.choice(_SYMBOLS) for _ in range(rng.randint(2, 6)))


def _cased(rng: random.Random, text: str) -> str:
    return rng.choice((text, text, text.capitalize(), text.upper()))


def _words(rng: random.Random, make: Callable[[random.Random], str]) -> str:
    return " ".join(make(rng) for _ in range(rng.randint(1, 3)))


def _keyboard(rng: random.Random, vocabulary: Sequence[str]) -> str:
    return _cased(rng, _words(rng, _keyboard_word)) + rng.choice(_ENDINGS)


def _random_letters(rng: random.Random, vocabulary: Sequence[str]) -> str:
    return _cased(rng, _words(rng, _random_word)) + rng.choice(_ENDINGS)


def _repeated_word(rng: random.Random, vocabulary: Sequence[str]) -> str:
    if rng.random() < 0.5:
        word, times = rng.choice(vocabulary), rng.randint(3, 6)
    else:
        word, times = rng.choice((_keyboard_word, _random_word))(rng), rng.randint(2, 4)
    return _cased(rng, " ".join([word] * times)) + rng.choice(_ENDINGS)


def _symbols(rng: random.Random, vocabulary: Sequence[str]) -> str:
    characters = list("".join(_symbol_run(rng) for _ in range(rng.randint(1, 3))))
    for _ in range(rng.randint(0, 2)):
        characters.insert(rng.randrange(len(characters) + 1), rng.choice(string.ascii_letters + string.digits))
    return "".join(characters)


def _mixed(rng: random.Random, vocabulary: Sequence[str]) -> str:
    pieces = [rng.choice((_keyboard_word, _random_word))(rng), _symbol_run(rng)]
    if rng.random() < 0.5:
        pieces.append(str(rng.randint(0, 9999)))
    rng.shuffle(pieces)
    return rng.choice((" ", "")).join(pieces)


_MAKERS = {
    "keyboard": _keyboard, "random_letters": _random_letters, "repeated_word": _repeated_word,
    "symbols": _symbols, "mixed": _mixed,
}


def vocabulary_of(messages: Sequence[str]) -> list[str]:
    """The distinct lowercase words of ``messages``, in first-seen order (so a seeded choice is reproducible)."""
    return list(dict.fromkeys(word for message in messages for word in _WORD.findall(message.casefold())))


def generate_noise(seed: int, per_kind: int, vocabulary: Sequence[str]) -> list[NoiseMessage]:
    """``per_kind`` messages of every kind; ``vocabulary`` gives the real words that repeated_word repeats."""
    if not vocabulary:
        raise ValueError("the vocabulary for repeated words is empty")
    rng = random.Random(seed)
    return [NoiseMessage(_MAKERS[kind](rng, vocabulary), kind) for kind in KINDS for _ in range(per_kind)]

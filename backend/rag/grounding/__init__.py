"""Is an answer grounded in the sources it cites? Judged on what the answer adds to its question.

An answer that repeats its question's words finds them in the sources (the question was asked about those
sources), so overlap with the sources says little. The check therefore takes the question and judges each
sentence of the answer on its new part: the content words, numbers and names the question does not hold (or
holds fewer times: "Who was born first, A or B: B" names B anew), plus a negation the question does not make.
That part must be found whole in one answer-bearing place: a single source sentence (with the sentence before
it when it opens with "It", "He", "They", …) that also holds the question's terms the answer sentence relates
its new part to ("X is owned by Time Inc": "owned", "Time", "Inc"), or, for a bare answer ("Delhi") or one
that copies its whole question, at least one of the question's terms. A new part spread over a passage, or
found only next to other words, is not supported; a new number or name missing there, or a negation the place
does not make, is never forgiven.

Decisions, in order:
1. Nothing new: an answer to a "wh" question that repeats most of it and names nothing else ("The presence of
   DC-SIGNR affects the MTCT of HIV-1") is not an answer. One that picks a few of its words ("Australia" for
   "… active in all of which country?") and answers to choice questions ("B") are checked whole as picks; a
   yes/no question may be answered "yes".
2. "Both A and B are P" (or "yes"/"no" to whether both are): P must stand with each name for "yes", and "no"
   is wrong when it does (both.py).
3. Fast: when under ``ungrounded_below`` of the new words and trigrams are anywhere in the sources, the
   answer is not grounded (``fast_score``).
4. A choice about time ("Who was born first, A or B?") is decided by the years the sources give
   (comparison.py).
5. Claims: every sentence with a new part must be supported as above, a name's words standing as one name
   (names.py). Then how the words relate (relations.py, competitors.py): a question asking "how many / how
   long …" wants a number; the answer to "directed by who?" must follow "directed by", not "written by"; "A
   directed X" is wrong where the sources say "X … directed by B"; a name given only after "behind / than /
   unlike" does not answer; when the sources use the noun a "what / which" question asks for ("what alias"), a
   sentence naming the answer must hold it; a name listed beside the answer ("founded by A and B") that stands
   with more of the question's terms than the answer makes the answer doubtful. Grounded when all hold.
6. A capable LLM (an injected ``verifier``), when there is one, decides an answer that failed step 5 only on
   word coverage, not on a number, name, negation or missing question term, and one that failed step 2: a
   paraphrase it can read.

Sentences about the documents or the assistant ("I could not find …") claim nothing and are skipped; a hedge
in front of a claim ("I'm not sure, but …") is dropped and the claim checked. Without a question every content
word is new and no question term is required. Parameters were chosen with ``axiom eval groundedness``
(backend/eval/groundedness.py, docs/benchmarks.md). What the rules still cannot see: a relation other than
"<verb> by" ("located in" vs "out of", "previously published by"), and a "no" whose reason the sources put in
other words.
"""

from backend.rag.grounding.checker import GroundednessChecker, GroundednessVerdict, Method, Verifier
from backend.rag.grounding.claims import fast_score
from backend.rag.grounding.llm_verdict import (
    HALLUCINATION_CHECK_PROMPT,
    LLMVerdict,
    format_check_prompt,
    parse_llm_verdict,
)
from backend.rag.grounding.sentences import says_enough_to_check, split_sentences, strip_citations
from backend.rag.grounding.support import SentenceSupport, sentence_support

__all__ = [
    "HALLUCINATION_CHECK_PROMPT", "GroundednessChecker", "GroundednessVerdict", "LLMVerdict", "Method",
    "SentenceSupport", "Verifier", "fast_score", "format_check_prompt", "parse_llm_verdict",
    "says_enough_to_check", "sentence_support", "split_sentences", "strip_citations",
]

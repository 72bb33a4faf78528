"""CPU time of one groundedness check, without the noise of a busy machine.

Usage: .venv/bin/python bench/grounding_speed.py
           [--halueval ../shared/data/halueval/qa_one-turn_data.json]
           [--labelled bench/data/grounding_answers.jsonl] [--repeat 3]
Every answer of the three HaluEval forms and of the labelled file is checked ``--repeat`` times with the
default checker (no LLM); the fastest of the runs is its time, so a pause caused by other processes does not
count. Prints the mean, p99 and max per check and the slowest answers. (`axiom eval groundedness` prints one
run's times, which on a shared machine include such pauses.)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from backend.eval.groundedness import FORM_TITLES, LabelledAnswer, load_halueval, load_labelled_answers
from backend.rag.grounding import GroundednessChecker


def _fastest(checker: GroundednessChecker, pair: LabelledAnswer, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        checker.check(pair.answer, pair.sources, question=pair.question)
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    halueval = Path("../shared/data/halueval/qa_one-turn_data.json")
    parser.add_argument("--halueval", type=Path, default=halueval)
    parser.add_argument("--labelled", type=Path, default=Path("bench/data/grounding_answers.jsonl"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    pairs = [pair for form in FORM_TITLES for pair in load_halueval(args.halueval, form)]
    pairs += load_labelled_answers(args.labelled)
    checker = GroundednessChecker()
    timed = sorted(
        ((_fastest(checker, pair, args.repeat) * 1000, pair.answer) for pair in pairs), reverse=True
    )
    mean = sum(ms for ms, _ in timed) / len(timed)
    print(f"{len(timed)} checks, fastest of {args.repeat}: mean {mean:.2f} ms, "
          f"p99 {timed[len(timed) // 100][0]:.1f} ms, max {timed[0][0]:.1f} ms")
    for ms, answer in timed[:3]:
        print(f"  {ms:6.1f} ms  {answer[:70]!r}")


if __name__ == "__main__":
    main()

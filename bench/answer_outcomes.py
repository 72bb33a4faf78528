"""What kind of answers the bundled model ends with: written and grounded, or the extractive fallback.

Usage: .venv/bin/python bench/answer_outcomes.py [--repeat-penalty P] [--temperature T] [--show]
Runs the time-to-first-token questions on the SQuAD paper through the whole pipeline (up to two regenerations)
and counts the final answer kinds, the attempts they took and how many answers repeat a sentence.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import scratch_services, shared_data
from ttft import QUESTIONS

from backend.rag.answer_text import drop_repeated_sentences


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat-penalty", type=float, default=None)
    parser.add_argument("--show", action="store_true", help="print every answer")
    args = parser.parse_args()
    overrides = {"llm_stall_timeout": 120}
    if args.repeat_penalty is not None:
        overrides["llm_repeat_penalty"] = args.repeat_penalty

    pdf = shared_data() / "pdfs" / "academic_2col_squad_rajpurkar2016.pdf"
    with tempfile.TemporaryDirectory(prefix="axiom-bench-") as work:
        services = scratch_services(Path(work), **overrides)
        services.ingestion.ingest("outcomes", pdf.name, pdf.read_bytes())
        kinds, attempts, repeating, seconds = Counter(), [], 0, []
        for n, question in enumerate(QUESTIONS):
            started = time.perf_counter()
            result = services.pipeline.run(question, chat_id="outcomes", session_id=f"s{n}")
            seconds.append(time.perf_counter() - started)
            kinds[result.answer_kind] += 1
            attempts.append(result.iterations)
            repeating += result.answer_kind != "extractive" and drop_repeated_sentences(result.answer) != result.answer
            if args.show:
                print(f"--- {question}\n[{result.answer_kind}, {result.iterations} attempts]\n{result.answer}\n")
    settings = services.settings
    print(f"repeat penalty {settings.llm_repeat_penalty}, {len(QUESTIONS)} questions, "
          f"answer kinds {dict(kinds)}, attempts {sum(attempts) / len(attempts):.1f} on average, "
          f"{repeating} written answers repeat a sentence, {sum(seconds) / len(seconds):.1f} s per answer")


if __name__ == "__main__":
    main()

"""What a regeneration costs the embedded model when its prompt shares the first attempt's prefix, or does not.

Usage: .venv/bin/python bench/regeneration_prefix.py [--rounds 3] [--threads 1]
Builds the real first prompt for a question on the SQuAD paper (retrieval, context budget, chat messages), lets the
bundled model write a short first answer, then times the first token of the retry prompt in two layouts,
alternating: feedback before the sources (the old layout) and after them (the current one, which keeps the whole
instruction-and-sources prefix of the first prompt, so llama.cpp reuses its cache of it).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import scratch_services, shared_data

from backend.llm.base import GenerationParams
from backend.rag.citations import build_context
from backend.rag.prompts import GENERATION_PROMPT, GENERATION_WITH_RETRY_PROMPT, SYSTEM_PROMPT

QUESTION = "How much were the crowdworkers paid?"
FEEDBACK = "- 'paid $20 per hour' is not in the sources"
FEEDBACK_FIRST = """Your previous answer contained claims the sources do not support:
{feedback}

Answer again using ONLY facts stated in the sources below, copying their wording where you can.
After every sentence, cite the source it comes from as [Source N]. Leave out anything the sources do not say.

Sources:
{context}

Question: {question}
Answer:"""


def first_token_seconds(llm, prompt: str) -> float:
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}]
    started = time.perf_counter()
    stream = llm.stream(messages, GenerationParams(max_tokens=1))
    next(stream, None)
    stream.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    pdf = shared_data() / "pdfs" / "academic_2col_squad_rajpurkar2016.pdf"
    with tempfile.TemporaryDirectory(prefix="axiom-bench-") as work:
        services = scratch_services(Path(work), llm_threads=args.threads)
        services.ingestion.ingest("bench", pdf.name, pdf.read_bytes())
        passages = services.retriever.retrieve("bench", QUESTION).relevant
        context, _ = build_context(passages, services.llm.count_tokens, services.settings.context_budget_tokens)
        llm = services.llm.provider  # the provider itself: this measures the model, not the queue
        first = GENERATION_PROMPT.format(context=context, question=QUESTION)
        layouts = {
            "feedback before the sources (old)": FEEDBACK_FIRST.format(
                feedback=FEEDBACK, context=context, question=QUESTION),
            "sources first, shared prefix (current)": GENERATION_WITH_RETRY_PROMPT.format(
                feedback=FEEDBACK, context=context, question=QUESTION),
        }
        seconds: dict[str, list[float]] = {name: [] for name in layouts}
        for _ in range(args.rounds):
            for name, retry in layouts.items():
                first_token_seconds(llm, first)  # the first attempt, as the graph runs it
                seconds[name].append(first_token_seconds(llm, retry))
    print(f"prompt tokens: first {llm.count_tokens(first)}, "
          + ", ".join(f"{name} {llm.count_tokens(p)}" for name, p in layouts.items()))
    print("| retry prompt layout | time to first token of the regeneration, median s (of "
          f"{args.rounds}) |\n|---|---|")
    for name, values in seconds.items():
        print(f"| {name} | {statistics.median(values):.2f} |")


if __name__ == "__main__":
    main()

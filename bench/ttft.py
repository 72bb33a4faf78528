"""Time to first token for simple questions, split into the pipeline's own share and the LLM's.

Usage: .venv/bin/python bench/ttft.py [--threads N] [--budget TOKENS] [--questions N]
The pipeline share is everything before the LLM is called (intent, retrieval, rerank, prompt building); the LLM
share is from that call to its first piece (prefill). Runs on the SQuAD paper from the public PDF set.
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

from backend.eval.metrics import percentile

QUESTIONS = [
    "How much were the crowdworkers paid per hour?",
    "How many question-answer pairs does SQuAD contain?",
    "What F1 score does the logistic regression model achieve?",
    "How were the Wikipedia articles selected?",
    "What does the exact match metric measure?",
    "How is the dataset split into training, development and test sets?",
]


class TimedLLM:
    """Delegates to the real LLM and records when it was asked and when its first piece came back."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self.name, self.context_window = inner.name, inner.context_window
        self.called_at: float | None = None
        self.first_piece_at: float | None = None
        self.prompt_tokens = 0

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)

    def complete(self, messages, params):
        return self._inner.complete(messages, params)

    def stream(self, messages, params):
        if self.called_at is not None:  # a regeneration: the first attempt already decided the first token
            yield from self._inner.stream(messages, params)
            return
        self.called_at = time.perf_counter()
        self.prompt_tokens = sum(self._inner.count_tokens(m["content"]) for m in messages)
        for piece in self._inner.stream(messages, params):
            if self.first_piece_at is None:
                self.first_piece_at = time.perf_counter()
            yield piece


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--budget", type=int, default=None, help="context_budget_tokens")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    overrides = {k: v for k, v in (("llm_threads", args.threads), ("context_budget_tokens", args.budget)) if v}

    pdf = shared_data() / "pdfs" / "academic_2col_squad_rajpurkar2016.pdf"
    with tempfile.TemporaryDirectory(prefix="axiom-bench-") as work:
        services = scratch_services(Path(work), **overrides)
        services.ingestion.ingest("ttft", pdf.name, pdf.read_bytes())
        timed = TimedLLM(services.llm)
        object.__setattr__(services.pipeline.deps, "llm", timed)
        pipeline_ms, llm_ms, total_ms, tokens = [], [], [], []
        for round_ in range(args.rounds + 1):
            for n, question in enumerate(QUESTIONS):
                timed.called_at = timed.first_piece_at = None
                started = time.perf_counter()
                first_token = None
                for event in services.pipeline.stream(question, chat_id="ttft", session_id=f"s{round_}-{n}"):
                    if event["type"] == "token" and first_token is None:
                        first_token = time.perf_counter()
                if round_ == 0 or timed.called_at is None:
                    continue  # the first round warms caches and the model
                pipeline_ms.append((timed.called_at - started) * 1000)
                llm_ms.append((timed.first_piece_at - timed.called_at) * 1000)
                total_ms.append((first_token - started) * 1000)
                tokens.append(timed.prompt_tokens)
    settings = services.settings
    print(f"threads {settings.llm_threads or 'all cores'}, context budget {settings.context_budget_tokens} tokens, "
          f"{len(total_ms)} questions, prompt {statistics.mean(tokens):.0f} tokens on average")
    print(f"{'ms':<28}{'p50':>8}{'p95':>8}")
    for name, values in (("pipeline before the LLM", pipeline_ms), ("LLM prefill to 1st piece", llm_ms),
                         ("time to first token", total_ms)):
        print(f"{name:<28}{percentile(values, 50):>8.0f}{percentile(values, 95):>8.0f}")


if __name__ == "__main__":
    main()

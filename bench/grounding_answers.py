"""The bundled model's written answers on shared PDFs, recorded raw for labelling the groundedness checker.

Usage: nice -n 10 .venv/bin/python bench/grounding_answers.py --out bench/data/grounding_answers_raw.jsonl
Ingests four papers from the public PDF set (one chat each), asks the questions in QUESTIONS through the whole
pipeline (default settings, up to two regenerations) and writes one JSON line per answer that reached the
groundedness checker: the question, the answer, the texts of the sources it was checked against, and the
checker's verdict at the time. Every regeneration is a line of its own: a rejected first attempt is as much a
written answer as an accepted one. Run it once; labelling and re-checking read the file and never re-generate.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import scratch_services, shared_data

from backend.rag.pipeline import RAGPipeline

# Questions written for this set by reading each paper; every one is answered in its paper.
QUESTIONS: dict[str, list[str]] = {
    "academic_2col_squad_rajpurkar2016.pdf": [
        "How many question-answer pairs does SQuAD contain?",
        "How many Wikipedia articles does SQuAD cover?",
        "How much were the crowdworkers paid per hour?",
        "What F1 score does the logistic regression model achieve?",
        "What is the human F1 score on SQuAD?",
        "Which crowdsourcing platform was used to collect the questions?",
        "How were the Wikipedia articles selected?",
        "What F1 score does the sliding window baseline get on the test set?",
        "What kinds of answers does the logistic regression model handle best?",
    ],
    "academic_2col_drqa_chen2017.pdf": [
        "What knowledge source does DrQA use to answer questions?",
        "What are the two components of DrQA?",
        "How many articles remain in the Wikipedia dump after processing?",
        "How does the Document Retriever hash bigrams?",
        "What kind of network does the Document Reader use?",
        "Which datasets are used to evaluate DrQA?",
        "Which word embeddings does the Document Reader use?",
        "What exact match score does the Document Reader get on the SQuAD development set?",
        "What is distant supervision used for in DrQA?",
    ],
    "academic_2col_bert_1810.04805.pdf": [
        "What does BERT stand for?",
        "How many layers does BERT-LARGE have?",
        "What GLUE score does BERT obtain?",
        "What percentage of input tokens are masked during pre-training?",
        "Which corpora are used for pre-training BERT?",
        "What is BERT's SQuAD v1.1 test F1 score?",
        "How many parameters does BERT-BASE have?",
        "What is the next sentence prediction task?",
        "What vocabulary does BERT use for its input embeddings?",
    ],
    "academic_2col_dpr_2004.04906.pdf": [
        "What encoders does Dense Passage Retrieval use?",
        "What similarity function does DPR use between question and passage vectors?",
        "Which library is used to index the dense passage vectors?",
        "How much does DPR improve top-20 passage retrieval accuracy over BM25?",
        "How are the Wikipedia articles split into passages?",
        "What are in-batch negatives?",
        "Which question answering datasets are used in the DPR experiments?",
        "Which Wikipedia dump is used as the source documents?",
        "What batch size is used to train the DPR encoders?",
    ],
}


class RecordingChecker:
    """Delegates to the real checker and keeps what every check was asked and what it said."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self.checks: list[dict] = []

    def check(self, answer, sources, **context):
        verdict = self._inner.check(answer, sources, **context)
        self.checks.append({
            "answer": answer, "sources": list(sources),
            "checker_at_generation": {"grounded": verdict.is_grounded, "method": verdict.method},
        })
        return verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    pdfs = shared_data() / "pdfs"
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="axiom-bench-") as work, args.out.open("w", encoding="utf-8") as out:
        services = scratch_services(Path(work), llm_stall_timeout=120)
        recorder = RecordingChecker(services.pipeline.deps.checker)
        pipeline = RAGPipeline(dataclasses.replace(services.pipeline.deps, checker=recorder))
        for number, (pdf, questions) in enumerate(QUESTIONS.items()):
            chat = f"paper{number}"
            services.ingestion.ingest(chat, pdf, (pdfs / pdf).read_bytes())
            for index, question in enumerate(questions):
                recorder.checks.clear()
                result = pipeline.run(question, chat_id=chat, session_id=f"{chat}q{index}")
                for attempt, check in enumerate(recorder.checks, start=1):
                    record = {"pdf": pdf, "question": question, "attempt": attempt, **check,
                              "final_answer_kind": result.answer_kind}
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                out.flush()
                print(f"{pdf} q{index}: {len(recorder.checks)} checked answers, final {result.answer_kind}",
                      flush=True)
    print(f"done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

"""`axiom eval answerability --judge model`: the model judges as the graph's node would, and the report says who
decided. The model is scripted (the bundled one's verdicts are measured in docs/benchmarks.md, not asserted)."""

import json

from backend.cli import build_parser
from backend.eval.answerability import run_answerability_eval
from backend.rag.answerability import AnswerabilityPolicy
from tests.eval.test_answerability_eval import SQUAD
from tests.rag.scripted import ScriptedLLM

ROWS = [
    {"id": "q1", "split": "test", "corpus": "pdfs", "document": SQUAD, "answerable": True,
     "question": "How many question-answer pairs does SQuAD contain?"},
    {"id": "q2", "split": "test", "corpus": "pdfs", "document": SQUAD, "answerable": False,
     "question": "How old were the crowdworkers who wrote the questions?"},
]


def test_the_model_judge_decides_and_the_report_says_so(tmp_path, make_services, shared_data):
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    llm = ScriptedLLM('{"answerable": false}', "The answer is: 2")
    services = make_services(tmp_path / "data", llm=llm)

    def run(judge, limit=None):
        return run_answerability_eval(
            services, questions, shared_data, split="test", policy=AnswerabilityPolicy(), distractors=0,
            log=print, judge_mode=judge, limit=limit,
        )[0]

    report = run("model")
    # q1: the model's no stands over the rules' yes; q2: its reply holds no verdict, the rules decline.
    assert report.answered == 0.0 and report.honest_not_found == 1.0
    assert report.judged_by == {"model": 1, "evidence, model reply unreadable": 1}
    assert "judged by: model 1, evidence, model reply unreadable 1" in report.table()
    assert 'QUESTION: How many question-answer pairs' in llm.prompts[0][-1]["content"]
    both = run("both", limit=1)  # the rules answer q1: the model is not asked
    assert (both.answerable, both.unanswerable, both.answered) == (1, 0, 1.0)
    assert both.judged_by == {"evidence": 1} and len(llm.prompts) == 2


def test_the_command_takes_the_judge_and_a_limit():
    args = build_parser().parse_args(
        ["eval", "answerability", "--shared-data", ".", "--split", "dev", "--judge", "model", "--limit", "20"])
    assert (args.judge, args.limit) == ("model", 20)
    assert build_parser().parse_args(["eval", "answerability", "--shared-data", "."]).judge == "evidence"

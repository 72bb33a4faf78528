"""`axiom eval retrieval` on a small BEIR-format folder written by the test, through the real code paths."""

import json
import subprocess
import sys

import pytest

from backend.eval.beir import load_beir
from backend.eval.metrics import mrr_at, ndcg_at, percentile, recall_at
from backend.eval.retrieval import METHODS, evaluate_retrieval

DOCS = {
    "d1": "Photosynthesis converts light energy into chemical energy stored in glucose inside chloroplasts.",
    "d2": "The mitochondrion is the powerhouse of the cell and produces ATP through respiration.",
    "d3": "Plate tectonics explains earthquakes and the slow drift of continents over millions of years.",
    "d4": "Vaccines train the adaptive immune system to recognise antigens from a pathogen.",
    "d5": "Black holes form when massive stars collapse under their own gravity.",
    "d6": "Insulin is a hormone that lets cells absorb glucose from the blood.",
}
QUERIES = {
    "q1": ("How do plants turn sunlight into sugar?", "d1"),
    "q2": ("Which organelle makes ATP?", "d2"),
    "q3": ("Why do continents move?", "d3"),
    "q4": ("How does immunisation work?", "d4"),
}


@pytest.fixture
def beir_folder(tmp_path):
    folder = tmp_path / "mini-beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"_id": i, "title": "", "text": t}) for i, t in DOCS.items())
    )
    (folder / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": q, "text": text}) for q, (text, _) in QUERIES.items())
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, (_, d) in QUERIES.items())
    )
    return folder


def test_metrics_match_hand_computed_values():
    relevant = {"a": 1, "b": 1}
    ranked = ["x", "a", "y", "b"]
    assert ndcg_at(ranked, relevant, 10) == pytest.approx((1 / 1.5849625 + 1 / 2.3219281) / (1 + 1 / 1.5849625))
    assert recall_at(ranked, relevant, 2) == 0.5 and recall_at(ranked, relevant, 10) == 1.0
    assert mrr_at(ranked, relevant, 10) == 0.5 and mrr_at(["x"], relevant, 10) == 0.0
    assert percentile([5, 1, 3, 2, 4], 50) == 3 and percentile([1, 2, 3, 4], 95) == 4


def test_every_method_finds_the_obvious_documents(beir_folder, services):
    report = evaluate_retrieval(services, load_beir(beir_folder), depth=50)
    assert report.documents == len(DOCS) and report.queries == len(QUERIES) and report.chunks >= len(DOCS)
    by_method = {m.method: m for m in report.methods}
    assert set(by_method) == set(METHODS)
    for method in ("dense", "hybrid", "hybrid+rerank"):
        assert by_method[method].recall_at_10 == 1.0
        assert by_method[method].mrr_at_10 >= 0.75, method
    assert "nDCG@10" in report.table()


def test_the_cli_prints_json(beir_folder, tmp_path):
    env_data = tmp_path / "cli-data"
    completed = subprocess.run(
        [sys.executable, "-m", "backend.cli", "eval", "retrieval", "--beir", str(beir_folder), "--json", "--quiet"],
        capture_output=True, text=True, timeout=600, check=False,
        env={**__import__("os").environ, "AXIOM_DATA_DIR": str(env_data)},
    )
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    assert [m["method"] for m in report["methods"]] == list(METHODS)
    assert all(0.0 <= m["ndcg_at_10"] <= 1.0 for m in report["methods"])


def test_a_folder_that_is_not_beir_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a BEIR folder"):
        load_beir(tmp_path)

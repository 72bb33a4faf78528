"""`axiom eval router` on a slice of the real CLINC150 file, with the real bundled MiniLM embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backend.config import Settings
from backend.embeddings import build_embedder
from backend.eval.garbage_set import KINDS, generate_noise, vocabulary_of
from backend.eval.router import (
    CLINC_MAPPING,
    EVAL_CLASSES,
    EXCLUDED,
    GARBAGE_RECALL_FLOOR,
    NOISE_PER_KIND,
    REPORT_GROUPS,
    NoisePoint,
    SweepPoint,
    best_noise_bits,
    best_setting,
    eval_class,
    evaluate_router,
    load_clinc,
    run_router_eval,
)
from backend.rag.intent import SEED_THRESHOLD, Intent

CLINC_FILE = Path(__file__).resolve().parents[3] / "shared" / "data" / "clinc150" / "data_full.json"
pytestmark = pytest.mark.skipif(not CLINC_FILE.is_file(), reason=f"public test data missing: {CLINC_FILE}")

# Two intents of every router class, one excluded intent, and oos.
SLICE_INTENTS = (
    "greeting", "goodbye", "thank_you", "tell_joke", "weather", "play_music",
    "balance", "recipe", "book_flight", "pto_request", "insurance", "oil_change_how", "yes",
)
PER_INTENT = {"val": 6, "test": 10}


@pytest.fixture(scope="session")
def embedder(tmp_path_factory):
    return build_embedder(Settings(data_dir=tmp_path_factory.mktemp("router-eval-embedder")))


@pytest.fixture(scope="module")
def clinc_slice(tmp_path_factory) -> Path:
    """The first few utterances of each chosen intent of the real file, in its own layout."""
    full = json.loads(CLINC_FILE.read_text())
    sliced = {}
    for split, per_intent in PER_INTENT.items():
        sliced[split] = [
            pair for intent in SLICE_INTENTS for pair in [p for p in full[split] if p[1] == intent][:per_intent]
        ]
        sliced[f"oos_{split}"] = full[f"oos_{split}"][: per_intent * 2]
    path = tmp_path_factory.mktemp("clinc") / "data_full.json"
    path.write_text(json.dumps(sliced))
    return path


@pytest.fixture(scope="module")
def report(embedder, clinc_slice):
    return evaluate_router(embedder, load_clinc(clinc_slice))


def test_every_clinc_intent_of_the_real_file_has_a_class():
    splits = load_clinc(CLINC_FILE)
    assert len(splits["test"]) == 4500 + 1000 - 5 * 30  # yes, no, maybe, repeat, cancel are excluded
    assert {query.expected for query in splits["test"]} == set(EVAL_CLASSES)
    assert {query.group for query in splits["test"]} == set(REPORT_GROUPS)
    assert CLINC_MAPPING["goodbye"] == "greeting" and CLINC_MAPPING["thank_you"] == "gratitude"
    assert CLINC_MAPPING["oos"] == CLINC_MAPPING["weather"] == CLINC_MAPPING["tell_joke"] == "off_topic"
    assert CLINC_MAPPING["balance"] == CLINC_MAPPING["definition"] == "question"


def test_files_that_are_not_clinc_are_refused(tmp_path):
    missing_split = tmp_path / "missing.json"
    missing_split.write_text(json.dumps({"val": [], "oos_val": [], "test": []}))
    with pytest.raises(ValueError, match="oos_test"):
        load_clinc(missing_split)
    unknown_intent = tmp_path / "unknown.json"
    splits = {"val": [["hi", "greeting"]], "oos_val": [], "test": [["x", "teleport"]], "oos_test": []}
    unknown_intent.write_text(json.dumps(splits))
    with pytest.raises(ValueError, match="teleport"):
        load_clinc(unknown_intent)


def test_commands_count_as_questions():
    assert eval_class(Intent.COMMAND) == "question"
    assert eval_class(Intent.OFF_TOPIC) == "off_topic" and eval_class(Intent.GARBAGE) == "garbage"


def test_the_chosen_router_is_clearly_better_than_chance_and_than_the_seed(report):
    chosen, seed_rule_tuned, seed = report.test
    assert seed.threshold == SEED_THRESHOLD and seed.neighbours == 1
    # Chance for a router that spreads messages over its four CLINC outcomes is about 0.25 per group.
    for group in ("greeting", "gratitude", "off_topic", "question"):
        assert chosen.accuracy[group] >= 0.6, (group, chosen.accuracy)
    assert chosen.balanced >= 0.6
    assert chosen.balanced > seed.balanced + 0.2
    assert seed_rule_tuned.neighbours == 1 and seed_rule_tuned.balanced > seed.balanced
    assert sum(sum(counts.values()) for counts in chosen.confusion.values()) == chosen.queries


def test_settings_are_chosen_on_val_and_the_report_states_the_mapping(report):
    chosen = report.test[0]
    best = best_setting(report.val_sweep)
    assert (chosen.neighbours, chosen.threshold) == (best.neighbours, best.threshold)
    assert {p.neighbours for p in report.val_sweep} == {1, 2, 3}
    text = report.table()
    assert "gratitude  ← thank_you" in text and "excluded   ← cancel, maybe, no, repeat, yes" in text
    assert f"seed: 1-NN, {SEED_THRESHOLD}" in text


def test_the_best_setting_keeps_questions_first():
    points = [
        SweepPoint(neighbours=1, threshold=0.3, balanced=0.90, question=0.90),  # best, but turns questions away
        SweepPoint(neighbours=2, threshold=0.4, balanced=0.80, question=0.96),
        SweepPoint(neighbours=1, threshold=0.5, balanced=0.80, question=0.99),
        SweepPoint(neighbours=1, threshold=0.6, balanced=0.70, question=1.00),
    ]
    assert best_setting(points) == points[2]  # tie on balanced: the higher threshold
    assert best_setting(points[:1]) == points[0]  # nothing meets the floor: the best there is


def test_the_cli_entry_point_prints_json(clinc_slice):
    printed = json.loads(run_router_eval(clinc_slice, as_json=True))
    assert printed["mapping"][EXCLUDED] == ["cancel", "maybe", "no", "repeat", "yes"]
    assert [run["label"].split(":")[0] for run in printed["test"]] == ["chosen", "seed rule, tuned", "seed"]
    assert printed["test_queries"] == len(SLICE_INTENTS[:-1]) * PER_INTENT["test"] + 2 * PER_INTENT["test"]


def test_the_noise_set_is_seeded_covers_every_kind_and_repeats_the_splits_words():
    vocabulary = vocabulary_of(["How do I pay my bill", "what is my balance"])
    assert vocabulary == ["how", "do", "i", "pay", "my", "bill", "what", "is", "balance"]
    noise = generate_noise(seed=1, per_kind=40, vocabulary=vocabulary)
    assert noise == generate_noise(seed=1, per_kind=40, vocabulary=vocabulary)
    assert noise != generate_noise(seed=2, per_kind=40, vocabulary=vocabulary)
    assert [message.kind for message in noise] == [kind for kind in KINDS for _ in range(40)]
    assert all(message.text.strip() for message in noise)
    repeated = [message.text.casefold() for message in noise if message.kind == "repeated_word"]
    assert any(text.split()[0].strip("?!.") in vocabulary for text in repeated)


def test_the_noise_threshold_keeps_real_queries_first():
    points = [
        NoisePoint(noise_bits=4.2, recall=0.995, in_scope_to_garbage=0.002),
        NoisePoint(noise_bits=4.7, recall=0.990, in_scope_to_garbage=0.001),
        NoisePoint(noise_bits=4.95, recall=0.985, in_scope_to_garbage=0.001),
        NoisePoint(noise_bits=5.2, recall=0.970, in_scope_to_garbage=0.0),  # misses too much noise
    ]
    assert best_noise_bits(points) == points[1]  # tie on in-scope: the higher recall
    assert all(point.recall < GARBAGE_RECALL_FLOOR for point in points[3:])
    assert best_noise_bits(points[3:]) == points[3]  # nothing meets the floor: the best there is


def test_the_report_scores_garbage_on_val_and_test(report):
    val, test = report.garbage
    assert (val.split, test.split) == ("val", "test")
    assert val.noise_messages == test.noise_messages == NOISE_PER_KIND * len(KINDS)
    assert set(test.recall_by_kind) == set(KINDS)
    assert test.recall >= 0.95 and test.in_scope_to_garbage <= 0.01
    assert val.noise_bits == best_noise_bits(report.noise_sweep).noise_bits
    assert "garbage recall" in report.table()

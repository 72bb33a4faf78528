"""`axiom eval router`: the intent router scored on CLINC150 (Larson et al. 2019, data_full.json).

CLINC150 labels 150 intents of a voice assistant plus out-of-scope (oos) requests; this maps them onto the four
router outcomes CLINC can test (``CLINC_MAPPING``, printed with every report):

- greeting ← greeting, goodbye. A farewell is a social pleasantry like a greeting: no retrieval, a short reply.
- gratitude ← thank_you.
- off_topic ← oos, the rest of small talk (jokes, fun facts, questions about the assistant), and the requests a
  document cannot answer: the live state of the world or the user's devices (weather, time, time zones, traffic,
  location, a ride), device actions and personal lists (timers, calls, music, smart home, shopping lists, reminders,
  calendar), assistant settings (voice, name, language), general utilities (calculator, spelling, conversions).
- question ← the rest of banking, credit cards, kitchen and dining, auto and commute, travel and work: requests with
  content a document (a card agreement, a car manual, an HR handbook, a recipe) could hold, so a document assistant
  should try retrieval; plus utility's ``definition``.
- excluded: yes, no, maybe, repeat, cancel. They are replies whose meaning depends on the previous turn, which
  CLINC does not give.

A predicted ``command`` counts as ``question``: both run retrieval. CLINC is single-turn, so the router runs with
no history. oos is reported apart from the rest of off_topic: its requests ("how many prime numbers are there
between 0 and 100") have the form of document questions, and whether a document holds the answer is for retrieval to
find out, so a router that sends them to retrieval is doing no harm.

The L1 settings (threshold, neighbours per intent) are chosen on the validation split (val + oos_val): the highest
balanced accuracy (the mean of the accuracies of greeting, gratitude, off_topic, oos and question, so 40 greetings
weigh as much as 1,740 questions, and val, with 100 oos, compares with test, with 1,000) among the settings that keep
at least ``QUESTION_FLOOR`` of the questions questions, because turning away a document question costs the user an
answer while routing chit-chat to retrieval costs one search. The seed's rule (nearest exemplar, 0.85), the seed's
rule at its best threshold and the chosen settings are then scored on the test split (test + oos_test), which is
used for nothing else. With ``use_llm`` the configured LLM is L2 for every run, on a fixed sample of the test split
(``LLM_SAMPLE_PER_GROUP`` per group), since each undecided message costs an LLM call.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from backend.config import Settings
from backend.embeddings import Embedder, build_embedder
from backend.eval.garbage_set import KINDS, NoiseMessage, generate_noise, vocabulary_of
from backend.eval.metrics import percentile
from backend.llm.base import LLM
from backend.llm.factory import build_llm
from backend.rag.garbage import DEFAULT_NOISE_BITS, RANDOM_LETTER_BITS, GarbageDetector, bundled_lexicon
from backend.rag.intent import (
    DEFAULT_EXEMPLARS,
    DEFAULT_NEIGHBOURS,
    DEFAULT_THRESHOLD,
    SEED_NEIGHBOURS,
    SEED_THRESHOLD,
    Intent,
    IntentRouter,
)

EVAL_CLASSES = ("greeting", "gratitude", "off_topic", "question")
REPORT_GROUPS = ("greeting", "gratitude", "off_topic", "oos", "question")
EXCLUDED = "excluded"
THRESHOLDS = tuple(round(0.20 + 0.025 * step, 3) for step in range(31))  # 0.200 … 0.950
NEIGHBOURS = (1, 2, 3)
QUESTION_FLOOR = 0.95
# The LLM layer takes about a second per undecided message on 2 cores, so with it the test split is sampled.
LLM_SAMPLE_PER_GROUP = 50
_SAMPLE_SEED = 0
# The noise set: this many generated messages of each kind per split, from a seed of its own per split.
NOISE_PER_KIND = 400
NOISE_SEEDS = {"val": 1, "test": 2}
# Noise thresholds tried on val, in bits a letter above (+) or below (-) letters typed at random.
NOISE_MARGINS = (-0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0)
GARBAGE_RECALL_FLOOR = 0.98

_CLINC_DOMAINS: dict[str, tuple[str, ...]] = {
    "banking": (
        "transfer", "transactions", "balance", "freeze_account", "pay_bill", "bill_balance", "bill_due",
        "interest_rate", "routing", "min_payment", "order_checks", "pin_change", "report_fraud",
        "account_blocked", "spending_history",
    ),
    "credit_cards": (
        "credit_score", "report_lost_card", "credit_limit", "rewards_balance", "new_card", "application_status",
        "card_declined", "international_fees", "apr", "redeem_rewards", "credit_limit_change", "damaged_card",
        "replacement_card_duration", "improve_credit_score", "expiration_date",
    ),
    "kitchen_and_dining": (
        "recipe", "restaurant_reviews", "calories", "nutrition_info", "restaurant_suggestion",
        "ingredients_list", "ingredient_substitution", "cook_time", "food_last", "meal_suggestion",
        "restaurant_reservation", "confirm_reservation", "how_busy", "cancel_reservation", "accept_reservations",
    ),
    "home": (
        "shopping_list", "shopping_list_update", "next_song", "play_music", "update_playlist", "todo_list",
        "todo_list_update", "calendar", "calendar_update", "what_song", "order", "order_status", "reminder",
        "reminder_update", "smart_home",
    ),
    "auto_and_commute": (
        "traffic", "directions", "gas", "gas_type", "distance", "current_location", "mpg", "oil_change_when",
        "oil_change_how", "jump_start", "uber", "schedule_maintenance", "last_maintenance", "tire_pressure",
        "tire_change",
    ),
    "travel": (
        "book_flight", "book_hotel", "car_rental", "travel_suggestion", "travel_alert", "travel_notification",
        "carry_on", "timezone", "vaccines", "translate", "flight_status", "international_visa", "lost_luggage",
        "plug_type", "exchange_rate",
    ),
    "utility": (
        "time", "alarm", "share_location", "find_phone", "weather", "text", "spelling", "make_call", "timer",
        "date", "calculator", "measurement_conversion", "flip_coin", "roll_dice", "definition",
    ),
    "work": (
        "direct_deposit", "pto_request", "taxes", "payday", "w2", "pto_balance", "pto_request_status",
        "next_holiday", "insurance", "insurance_change", "schedule_meeting", "pto_used", "meeting_schedule",
        "rollover_401k", "income",
    ),
    "small_talk": (
        "who_made_you", "meaning_of_life", "who_do_you_work_for", "do_you_have_pets", "what_are_your_hobbies",
        "fun_fact", "what_is_your_name", "where_are_you_from", "goodbye", "thank_you", "greeting", "tell_joke",
        "are_you_a_bot", "how_old_are_you", "what_can_i_ask_you",
    ),
    "meta": (
        "change_speed", "user_name", "whisper_mode", "yes", "change_volume", "no", "change_language", "repeat",
        "change_accent", "cancel", "sync_device", "change_user_name", "change_ai_name", "reset_settings",
        "maybe",
    ),
}
_QUESTION_DOMAINS = ("banking", "credit_cards", "kitchen_and_dining", "auto_and_commute", "travel", "work")
_OFF_TOPIC_DOMAINS = ("small_talk", "home", "utility", "meta")
# Inside question domains, these ask for the live state of the world (the road, a ride, the clock), not content.
_LIVE_STATE = ("traffic", "current_location", "uber", "timezone")
_EXCEPTIONS = {
    "greeting": "greeting", "goodbye": "greeting", "thank_you": "gratitude", "definition": "question",
    **{intent: "off_topic" for intent in _LIVE_STATE},
    **{intent: EXCLUDED for intent in ("yes", "no", "maybe", "repeat", "cancel")},
}


def _clinc_mapping() -> dict[str, str]:
    mapping = {"oos": "off_topic"}
    for domain in _QUESTION_DOMAINS:
        mapping.update(dict.fromkeys(_CLINC_DOMAINS[domain], "question"))
    for domain in _OFF_TOPIC_DOMAINS:
        mapping.update(dict.fromkeys(_CLINC_DOMAINS[domain], "off_topic"))
    return mapping | _EXCEPTIONS


CLINC_MAPPING: Mapping[str, str] = _clinc_mapping()


def eval_class(intent: Intent) -> str:
    """The CLINC class a router decision is scored as; other intents (garbage, clarify_needed …) are always wrong."""
    return "question" if intent is Intent.COMMAND else intent.value


@dataclass(frozen=True)
class LabelledQuery:
    text: str
    clinc_intent: str
    expected: str  # the router class that is right for it

    @property
    def group(self) -> str:
        return "oos" if self.clinc_intent == "oos" else self.expected


def load_clinc(path: Path) -> dict[str, list[LabelledQuery]]:
    """``{"val": …, "test": …}``: in-scope and oos queries of each split together, excluded intents left out."""
    raw = json.loads(path.read_text())
    splits = {}
    for split in ("val", "test"):
        if split not in raw or f"oos_{split}" not in raw:
            raise ValueError(f"{path} is not CLINC150 data_full.json: '{split}' or 'oos_{split}' is missing")
        pairs = raw[split] + raw[f"oos_{split}"]
        unknown = {intent for _, intent in pairs} - CLINC_MAPPING.keys()
        if unknown:
            raise ValueError(f"CLINC intents with no mapping: {sorted(unknown)}")
        splits[split] = [
            LabelledQuery(text, intent, CLINC_MAPPING[intent])
            for text, intent in pairs
            if CLINC_MAPPING[intent] != EXCLUDED
        ]
    return splits


@dataclass(frozen=True)
class RouterScores:
    label: str
    neighbours: int
    threshold: float
    queries: int
    accuracy: dict[str, float]  # per report group
    overall: float
    balanced: float  # mean of the per-group accuracies
    layers: dict[str, float]  # share of queries decided by each layer
    confusion: dict[str, dict[str, int]]  # report group → predicted intent → count
    p50_ms: float
    mean_ms: float


def score_router(router: IntentRouter, queries: Sequence[LabelledQuery], label: str) -> RouterScores:
    hits: dict[str, list[bool]] = {group: [] for group in REPORT_GROUPS}
    layers: Counter[str] = Counter()
    latencies: list[float] = []
    confusion: dict[str, Counter[str]] = {group: Counter() for group in REPORT_GROUPS}
    for query in queries:
        started = time.perf_counter()
        decision = router.classify(query.text)
        latencies.append((time.perf_counter() - started) * 1000)
        hits[query.group].append(eval_class(decision.intent) == query.expected)
        layers[decision.layer] += 1
        confusion[query.group][decision.intent.value] += 1
    accuracy = {group: sum(group_hits) / len(group_hits) for group, group_hits in hits.items() if group_hits}
    return RouterScores(
        label=label,
        neighbours=router.neighbours,
        threshold=router.threshold,
        queries=len(queries),
        accuracy=accuracy,
        overall=sum(sum(group_hits) for group_hits in hits.values()) / len(queries),
        balanced=sum(accuracy.values()) / len(accuracy),
        layers={layer: count / len(queries) for layer, count in sorted(layers.items())},
        confusion={group: dict(counts.most_common()) for group, counts in confusion.items() if counts},
        p50_ms=percentile(latencies, 50),
        mean_ms=sum(latencies) / len(latencies),
    )


class _MemoisedEmbedder:
    """Embeds each distinct text once, so a sweep over router settings re-scores vectors instead of re-running the
    model. Only the first scoring of a query pays for the model, as a new chat message does."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self.model_id = embedder.model_id
        self.dimension = embedder.dimension
        self._queries: dict[str, np.ndarray] = {}
        self._documents: dict[tuple[str, ...], np.ndarray] = {}

    def embed_query(self, text: str) -> np.ndarray:
        if text not in self._queries:
            self._queries[text] = self._embedder.embed_query(text)
        return self._queries[text]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        key = tuple(texts)
        if key not in self._documents:
            self._documents[key] = self._embedder.embed_documents(texts)
        return self._documents[key]


@dataclass(frozen=True)
class SweepPoint:
    neighbours: int
    threshold: float
    balanced: float
    question: float


def sweep_settings(
    embedder: Embedder, val: Sequence[LabelledQuery], garbage: GarbageDetector
) -> list[SweepPoint]:
    points = []
    for neighbours in NEIGHBOURS:
        for threshold in THRESHOLDS:
            router = IntentRouter(embedder, threshold=threshold, neighbours=neighbours, garbage=garbage)
            scores = score_router(router, val, "sweep")
            points.append(SweepPoint(neighbours, threshold, scores.balanced, scores.accuracy["question"]))
    return points


def best_setting(points: Sequence[SweepPoint]) -> SweepPoint:
    """Highest balanced accuracy among the points that keep QUESTION_FLOOR of the questions (all points if none
    does); on a tie, the higher threshold, which sends more messages to retrieval."""
    safe = [point for point in points if point.question >= QUESTION_FLOOR] or list(points)
    return max(safe, key=lambda point: (round(point.balanced, 6), point.threshold))


def noise_set(split: str, queries: Sequence[LabelledQuery]) -> list[NoiseMessage]:
    """The split's generated noise; the words it repeats come from the split's own in-scope queries."""
    in_scope = [query.text for query in queries if query.clinc_intent != "oos"]
    return generate_noise(NOISE_SEEDS[split], NOISE_PER_KIND, vocabulary_of(in_scope))


@dataclass(frozen=True)
class NoisePoint:
    noise_bits: float
    recall: float  # share of the noise set judged garbage
    in_scope_to_garbage: float  # share of CLINC's in-scope queries judged garbage


def sweep_noise_bits(
    lexicon: frozenset[str], noise: Sequence[NoiseMessage], queries: Sequence[LabelledQuery]
) -> list[NoisePoint]:
    """The garbage rule alone (no embedding needed) at each of NOISE_MARGINS around random typing."""
    in_scope = [query.text for query in queries if query.clinc_intent != "oos"]
    points = []
    for margin in NOISE_MARGINS:
        detector = GarbageDetector(lexicon, RANDOM_LETTER_BITS + margin)
        recall = sum(detector.is_garbage(message.text) for message in noise) / len(noise)
        misrouted = sum(detector.is_garbage(text) for text in in_scope) / len(in_scope)
        points.append(NoisePoint(round(RANDOM_LETTER_BITS + margin, 3), recall, misrouted))
    return points


def best_noise_bits(points: Sequence[NoisePoint]) -> NoisePoint:
    """The fewest in-scope queries judged garbage among the points that catch GARBAGE_RECALL_FLOOR of the noise
    (all points if none does), then the higher recall: a real question turned away costs the user an answer, a
    piece of noise let through costs one search that finds nothing."""
    safe = [point for point in points if point.recall >= GARBAGE_RECALL_FLOOR] or list(points)
    return min(safe, key=lambda point: (point.in_scope_to_garbage, -point.recall))


@dataclass(frozen=True)
class GarbageScores:
    split: str
    noise_bits: float
    noise_messages: int
    recall: float
    recall_by_kind: dict[str, float]
    missed: list[str]  # noise the router did not call garbage
    in_scope_queries: int
    in_scope_to_garbage: float
    misrouted: list[str]  # in-scope queries the router called garbage
    oos_to_garbage: float


def score_garbage(
    router: IntentRouter, split: str, noise: Sequence[NoiseMessage], queries: Sequence[LabelledQuery]
) -> GarbageScores:
    """The whole router (no LLM: garbage is the rules' alone) on the split's noise and CLINC queries."""
    caught = {message: router.classify(message.text).intent is Intent.GARBAGE for message in noise}
    to_garbage = {query: router.classify(query.text).intent is Intent.GARBAGE for query in queries}
    in_scope = [query for query in queries if query.clinc_intent != "oos"]
    oos = [query for query in queries if query.clinc_intent == "oos"]
    by_kind = {kind: [hit for message, hit in caught.items() if message.kind == kind] for kind in KINDS}
    return GarbageScores(
        split=split,
        noise_bits=router.noise_bits,
        noise_messages=len(noise),
        recall=sum(caught.values()) / len(noise),
        recall_by_kind={kind: sum(hits) / len(hits) for kind, hits in by_kind.items() if hits},
        missed=[message.text for message, hit in caught.items() if not hit],
        in_scope_queries=len(in_scope),
        in_scope_to_garbage=sum(to_garbage[query] for query in in_scope) / len(in_scope),
        misrouted=[query.text for query in in_scope if to_garbage[query]],
        oos_to_garbage=sum(to_garbage[query] for query in oos) / len(oos) if oos else 0.0,
    )


@dataclass(frozen=True)
class RouterReport:
    mapping: dict[str, list[str]]  # router class → CLINC intents
    val_queries: int
    test_queries: int
    test_sampled: bool
    exemplars: int
    llm: str | None
    router_defaults: tuple[int, float]  # (neighbours, threshold) that IntentRouter uses when not told
    val_sweep: list[SweepPoint]
    test: list[RouterScores]
    noise_defaults: float  # the noise threshold GarbageDetector uses when not told
    noise_sweep: list[NoisePoint]  # on val
    garbage: list[GarbageScores]  # val, then test, at the threshold chosen on val

    def as_dict(self) -> dict:
        return asdict(self)

    def table(self) -> str:
        lines = ["class mapping (CLINC intent → router class; a predicted 'command' counts as question):"]
        lines += [f"  {name:<10} ← {', '.join(intents)}" for name, intents in self.mapping.items()]
        sample = f", sampled: at most {LLM_SAMPLE_PER_GROUP} per group" if self.test_sampled else ""
        lines += [
            (
                f"exemplars {self.exemplars}; LLM layer {self.llm or 'off'}; IntentRouter defaults: "
                f"{self.router_defaults[0]} neighbours, threshold {self.router_defaults[1]}"
            ),
            (
                f"settings chosen on val ({self.val_queries} queries): best balanced accuracy with question "
                f"accuracy >= {QUESTION_FLOOR}"
            ),
            f"test split: {self.test_queries} queries (test + oos_test{sample})",
            f"{'run':<34}" + "".join(f"{group:>10}" for group in REPORT_GROUPS)
            + f"{'overall':>9}{'balanced':>9}{'p50 ms':>8}{'mean ms':>8}  layers",
        ]
        for scores in self.test:
            cells = "".join(f"{scores.accuracy.get(group, float('nan')):>10.4f}" for group in REPORT_GROUPS)
            layers = " ".join(f"{layer} {share:.0%}" for layer, share in scores.layers.items())
            lines.append(
                f"{scores.label:<34}{cells}{scores.overall:>9.4f}{scores.balanced:>9.4f}"
                f"{scores.p50_ms:>8.1f}{scores.mean_ms:>8.1f}  {layers}"
            )
        lines.append("latency: the first run embeds each query with the model; later runs reuse its vectors")
        lines += self._garbage_lines()
        for scores in self.test:
            lines.append(f"confusion, {scores.label} (group → predicted intents):")
            for group, counts in scores.confusion.items():
                lines.append(f"  {group:<10} " + ", ".join(f"{intent} {n}" for intent, n in counts.items()))
        return "\n".join(lines)


    def _garbage_lines(self) -> list[str]:
        lines = [
            (
                f"garbage: generated noise ({NOISE_PER_KIND} of each kind: {', '.join(KINDS)}) and CLINC in-scope "
                f"queries, through the chosen router; noise threshold (bits a letter, random typing "
                f"{RANDOM_LETTER_BITS:.3f}; GarbageDetector default {self.noise_defaults:.3f}) chosen on val: fewest "
                f"in-scope queries sent to garbage with recall >= {GARBAGE_RECALL_FLOOR}"
            ),
            "  val sweep: " + ", ".join(
                f"{p.noise_bits:.3f} bits: recall {p.recall:.3f}, in-scope {p.in_scope_to_garbage:.2%}"
                for p in self.noise_sweep
            ),
        ]
        for scores in self.garbage:
            kinds = " ".join(f"{kind} {recall:.3f}" for kind, recall in scores.recall_by_kind.items())
            lines += [
                (
                    f"  {scores.split:<5} {scores.noise_bits:.3f} bits: garbage recall {scores.recall:.4f} "
                    f"({scores.noise_messages} messages; {kinds}); in-scope sent to garbage "
                    f"{scores.in_scope_to_garbage:.2%} of {scores.in_scope_queries}; oos sent to garbage "
                    f"{scores.oos_to_garbage:.2%}"
                ),
                f"        missed: {scores.missed[:12]}",
                f"        in-scope sent to garbage: {scores.misrouted[:12]}",
            ]
        return lines


def _stratified_sample(queries: Sequence[LabelledQuery], per_group: int) -> list[LabelledQuery]:
    rng = random.Random(_SAMPLE_SEED)
    sample = []
    for group in REPORT_GROUPS:
        members = [query for query in queries if query.group == group]
        sample += rng.sample(members, min(per_group, len(members)))
    return sample


def evaluate_router(
    embedder: Embedder, splits: Mapping[str, Sequence[LabelledQuery]], llm: LLM | None = None
) -> RouterReport:
    memoised = _MemoisedEmbedder(embedder)
    lexicon = bundled_lexicon()
    noise = {split: noise_set(split, queries) for split, queries in splits.items()}
    noise_sweep = sweep_noise_bits(lexicon, noise["val"], splits["val"])
    garbage = GarbageDetector(lexicon, best_noise_bits(noise_sweep).noise_bits)
    sweep = sweep_settings(memoised, splits["val"], garbage)
    chosen = best_setting(sweep)
    seed_rule = best_setting([point for point in sweep if point.neighbours == SEED_NEIGHBOURS])
    runs = [
        ("chosen", chosen.neighbours, chosen.threshold),
        ("seed rule, tuned", SEED_NEIGHBOURS, seed_rule.threshold),
        ("seed", SEED_NEIGHBOURS, SEED_THRESHOLD),
    ]
    test = splits["test"] if llm is None else _stratified_sample(splits["test"], LLM_SAMPLE_PER_GROUP)
    scores = [
        score_router(
            IntentRouter(memoised, llm, threshold=threshold, neighbours=neighbours, garbage=garbage),
            test,
            f"{name}: {neighbours}-NN, {threshold}",
        )
        for name, neighbours, threshold in runs
    ]
    chosen_router = IntentRouter(memoised, threshold=chosen.threshold, neighbours=chosen.neighbours, garbage=garbage)
    garbage_scores = [
        score_garbage(chosen_router, split, noise[split], splits[split]) for split in ("val", "test")
    ]
    mapping: dict[str, list[str]] = {name: [] for name in (*EVAL_CLASSES, EXCLUDED)}
    for clinc_intent, name in sorted(CLINC_MAPPING.items()):
        mapping[name].append(clinc_intent)
    return RouterReport(
        mapping=mapping,
        val_queries=len(splits["val"]),
        test_queries=len(test),
        test_sampled=llm is not None,
        exemplars=sum(len(texts) for texts in DEFAULT_EXEMPLARS.values()),
        llm=getattr(llm, "name", None),
        router_defaults=(DEFAULT_NEIGHBOURS, DEFAULT_THRESHOLD),
        val_sweep=sweep,
        test=scores,
        noise_defaults=DEFAULT_NOISE_BITS,
        noise_sweep=noise_sweep,
        garbage=garbage_scores,
    )


def run_router_eval(path: Path, as_json: bool, use_llm: bool = False) -> str:
    settings = Settings()
    splits = load_clinc(path)
    llm = build_llm(settings) if use_llm else None
    with tempfile.TemporaryDirectory(prefix="axiom-router-eval-") as cache_dir:
        # An empty embedding cache, so every message costs what a new chat message costs (a cache miss), and the
        # user's cache is not filled with CLINC sentences.
        cold = settings.model_copy(update={"embedding_cache_path": Path(cache_dir) / "embeddings.db"})
        report = evaluate_router(build_embedder(cold), splits, llm)
    return json.dumps(report.as_dict(), indent=2) if as_json else report.table()

"""Reading a BEIR-format folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BeirDataset:
    corpus: dict[str, str]  # doc id → title and text
    queries: dict[str, str]  # query id → text, only queries that have judgements
    qrels: dict[str, dict[str, int]]  # query id → doc id → relevance grade

    def first_queries(self, n: int) -> BeirDataset:
        return BeirDataset(self.corpus, dict(list(self.queries.items())[:n]), self.qrels)


def load_beir(folder: Path, split: str = "test") -> BeirDataset:
    qrels_path = folder / "qrels" / f"{split}.tsv"
    for required in (folder / "corpus.jsonl", folder / "queries.jsonl", qrels_path):
        if not required.is_file():
            raise FileNotFoundError(f"not a BEIR folder: {required} is missing")
    qrels: dict[str, dict[str, int]] = {}
    with qrels_path.open(newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            grade = int(row["score"])
            if grade > 0:
                qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = grade
    corpus = {}
    with (folder / "corpus.jsonl").open() as f:
        for line in f:
            doc = json.loads(line)
            corpus[str(doc["_id"])] = "\n\n".join(part for part in (doc.get("title"), doc.get("text")) if part)
    queries = {}
    with (folder / "queries.jsonl").open() as f:
        for line in f:
            query = json.loads(line)
            if str(query["_id"]) in qrels:
                queries[str(query["_id"])] = query["text"]
    return BeirDataset(corpus=corpus, queries=queries, qrels=qrels)

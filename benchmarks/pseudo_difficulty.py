"""Would harder pseudo questions choose another loop for a left-out corpus?

``retrieval_rerank.py --adapt`` chooses the adapted loop's setting on adapt's scoring sets: the
corpus's pseudo-validation questions and the training files' validation questions. Every
candidate answers the pseudo questions at 95-98 recall, so they hardly tell the candidates apart,
and a wider first hop (which helps real HotpotQA questions: their top 20 holds 96% of the gold)
always loses. One guess was that the pseudo questions are too easy for the search: most of their
gold is in the question's own top 6. This script tests that guess on the saved choice runs: it
scores every candidate again on the questions whose gold the question's search does *not* put in
its top K (``hard``), and on the rest.

"The question's top K" is read from the first hop of the candidate with the widest first hop and
no first-hop reranker (the search's own order), so no search runs again.

    python benchmarks/pseudo_difficulty.py \\
        runs/bench_protocol/bm25/models/2wikimultihopqa+musique/adapted/hotpotqa/loop-choice --k 6

It reads only the choice runs (pseudo and validation questions), never a dev question.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hop_gate import cell, first_hop_hits, recall_all_gold

from efficientrag.jsonl import read_jsonl

SETS = ("pseudo-validation",)


def candidate_runs(root: Path, set_name: str) -> dict[str, Path]:
    """Each candidate's run folder for ``set_name`` (``root/<candidate>/<fingerprint>/<set>``)."""
    runs = {}
    for folder in sorted(root.glob(f"*/*/{set_name}")):
        if (folder / "predictions.jsonl").is_file():
            runs[folder.parent.parent.name] = folder
    return runs


def read_records(folder: Path) -> list[dict[str, Any]]:
    return list(read_jsonl(folder / "predictions.jsonl"))


def search_order(runs: Mapping[str, Path]) -> dict[str, list[str]]:
    """Per question id, the question's hits in the search's order: the first hop of the candidate
    that searched widest without a first-hop reranker."""
    best: tuple[int, dict[str, list[str]]] = (-1, {})
    for folder in runs.values():
        settings = json.loads((folder / "run.json").read_text())["fingerprint"]["settings"]["efficientrag"]
        if "first_hop_reranker_digest" in settings:
            continue
        width = settings.get("first_top_k") or settings["top_k"]
        if width > best[0]:
            where = str(folder / "predictions.jsonl")
            order = {r["id"]: [h["id"] for h in first_hop_hits(r, where)] for r in read_records(folder)}
            best = (width, order)
    if best[0] < 0:
        raise ValueError("no candidate without a first-hop reranker: the search's own order is unknown")
    return best[1]


def split_hard(records: Sequence[Mapping[str, Any]], order: Mapping[str, list[str]], k: int) -> set[str]:
    """Ids of the questions with a gold chunk outside the question's top ``k``."""
    return {
        r["id"]
        for r in records
        if r.get("gold_chunk_ids") and not set(r["gold_chunk_ids"]) <= set(order.get(r["id"], [])[:k])
    }


def scores(records: Sequence[Mapping[str, Any]]) -> str:
    if not records:
        return "-"
    return cell(recall_all_gold([(r["retrieved_ids"], r["gold_chunk_ids"]) for r in records]))


def set_table(root: Path, set_name: str, k: int) -> list[str]:
    runs = candidate_runs(root, set_name)
    if not runs:
        raise FileNotFoundError(f"{root}: no <candidate>/<fingerprint>/{set_name}/predictions.jsonl")
    order = search_order(runs)
    loaded = {
        name: [r for r in read_records(folder) if r.get("gold_chunk_ids")] for name, folder in runs.items()
    }
    hard = split_hard(next(iter(loaded.values())), order, k)
    n = len(next(iter(loaded.values())))
    lines = [
        f"{set_name}: {n} questions, {len(hard)} with gold outside the question's top {k} (hard)",
        "",
        f"| candidate | all {n} | hard {len(hard)} | rest {n - len(hard)} |",
        "|---|---|---|---|",
    ]
    for name, records in loaded.items():
        in_hard = [r for r in records if r["id"] in hard]
        rest = [r for r in records if r["id"] not in hard]
        lines.append(f"| {name} | {scores(records)} | {scores(in_hard)} | {scores(rest)} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("loop_choice", type=Path, help="the adapted loop's choice folder (loop-choice/)")
    parser.add_argument("--sets", default=",".join(SETS), help="scoring sets to read (comma-separated)")
    parser.add_argument("--k", type=int, default=6, help="hard: a gold chunk outside the question's top k")
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error("--k must be >= 1")
    print(
        f"Command: `python benchmarks/pseudo_difficulty.py {args.loop_choice} --sets {args.sets} --k {args.k}`"
    )
    print("\nRecall / all-gold (chunks per question):")
    try:
        for set_name in args.sets.split(","):
            print("\n" + "\n".join(set_table(args.loop_choice, set_name, args.k)))
    except (FileNotFoundError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

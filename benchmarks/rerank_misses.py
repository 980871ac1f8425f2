"""Where the gold chunks the loop missed sit in the search's own ranking.

Why does a loop that keeps at most 7 chunks fall short of Direct-R@10? Each gold chunk the loop did
not keep either lies in the question's own top K (Direct-R@K holds it: the Labeler's tag or the
chunk budget dropped it, and only a better judge can win it back) or beyond it (only a hop can find
it). Each side is split by the chunk's fate in the loop (``efficientrag.eval.gold_fate``), and a
Terminate tag by how sure the Labeler was. Direct-R@K's own misses are beside, for the balance.

    python benchmarks/rerank_misses.py --loop RUN_DIR --direct DIRECT_R_RUN_DIR [--k 10]

Both folders are runs of ``benchmarks/retrieval_rerank.py`` (or any evaluation) on the same
questions: the loop's with its traces, Direct-R's ranked to at least K.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from report_output import command_line

from efficientrag.eval.gold_fate import FATE_HEADERS, FATES, fate_of_record
from efficientrag.jsonl import read_jsonl
from efficientrag.pipeline.budget import judgements_from_trace

MISSED_FATES = FATES[1:]  # every fate but "kept"
PLACES = ("in the search's top K", "beyond the search's top K")
SURE_BELOW = 0.05  # a Terminate tag with the best Continue probability below this is a confident one


def count_misses(
    loop: Iterable[Mapping[str, Any]], direct: Mapping[str, Mapping[str, Any]], k: int
) -> Counter[tuple[str, str]]:
    """(place, fate) -> gold chunks the loop missed; also ``(place, "sure_terminate")`` for the
    Terminate tags below ``SURE_BELOW``, and ``("direct", "missed")`` for Direct-R@K's own misses.

    Args:
        loop: The loop's prediction records (with ``trace.hops``).
        direct: Direct-R's prediction records by question id, ``retrieved_ids`` in rank order.
        k: The cut-off of the search's own ranking.
    """
    counts: Counter[tuple[str, str]] = Counter()
    for rec in loop:
        qid = str(rec["id"])
        if qid not in direct:
            raise ValueError(f"question {qid!r} of the loop's run has no Direct-R record")
        ranked = direct[qid]["retrieved_ids"]
        if len(ranked) < k:
            raise ValueError(f"question {qid!r}: Direct-R's record holds fewer than {k} chunks")
        top_k = set(ranked[:k])
        counts["direct", "missed"] += len(set(rec["gold_chunk_ids"]) - top_k)
        where = f"question {qid!r}"
        probs = judgements_from_trace(rec["trace"]["hops"], where=where).judged  # best at any hop
        for gid, fate in fate_of_record(rec, where=where).items():
            if fate == "kept":
                continue
            place = PLACES[0] if gid in top_k else PLACES[1]
            counts[place, fate] += 1
            if fate == "tagged_terminate" and probs.get(gid, SURE_BELOW) < SURE_BELOW:
                counts[place, "sure_terminate"] += 1
    return counts


def render(counts: Mapping[tuple[str, str], int], k: int, n_questions: int, command: str) -> str:
    heads = [FATE_HEADERS[FATES.index(f)] for f in MISSED_FATES]
    heads[0] += f" (Continue below {SURE_BELOW} at every hop)"
    lines = [
        f"Gold chunks the loop missed on {n_questions} questions, by where the search ranked them"
        f" (Direct-R@{k} misses {counts['direct', 'missed']}). Command: `{command}`",
        "",
        "| where | missed | " + " | ".join(heads) + " |",
        "|---|---|" + "---|" * len(heads),
    ]
    for place in PLACES:
        cells = [str(counts[place, f]) for f in MISSED_FATES]
        cells[0] += f" ({counts[place, 'sure_terminate']})"
        total = sum(counts[place, f] for f in MISSED_FATES)
        lines.append(f"| {place.replace('K', str(k))} | {total} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--loop", type=Path, required=True, help="the loop's run folder (predictions.jsonl)")
    parser.add_argument("--direct", type=Path, required=True, help="Direct-R's run folder, same questions")
    parser.add_argument("--k", type=int, default=10, help="the search's cut-off to compare with")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    loop = list(read_jsonl(args.loop / "predictions.jsonl"))
    direct = {str(r["id"]): r for r in read_jsonl(args.direct / "predictions.jsonl")}
    counts = count_misses(loop, direct, args.k)
    command = command_line(__file__, argv)
    print(render(counts, args.k, len(loop), command.strip()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How one teacher's synthesis output compares with another's on the same questions.

Used to say how far an LLM teacher is from the annotation teacher (which reads the datasets' own
supporting facts and decompositions): agreement of the words each labels useful in the same
(sub-question, chunk) pairs, and whether the next-hop queries carry the bridge entity, the answer
of the hop they depend on, which is what lets the next retrieval find the next chunk.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from efficientrag.jsonl import read_records
from efficientrag.text.normalize import normalize_answer


def label_agreement(candidate_dir: str | Path, reference_dir: str | Path) -> dict[str, float]:
    """Micro precision / recall / F1 of the candidate's useful words against the reference's,
    over the (question, chunk) pairs both kept with the same chunk words (``aligned.jsonl``), and the
    share of those pairs labeled identically."""
    ref = {(r["question_id"], r["chunk_id"]): r for r in read_records(Path(reference_dir) / "aligned.jsonl")}
    tp = fp = fn = same = pairs = 0
    for rec in read_records(Path(candidate_dir) / "aligned.jsonl"):
        other = ref.get((rec["question_id"], rec["chunk_id"]))
        if (
            other is None
            or other.get("chunk_words") != rec.get("chunk_words")
            or len(other["labels"]) != len(rec["labels"])
        ):
            continue
        pairs += 1
        a, b = rec["labels"], other["labels"]
        tp += sum(1 for x, y in zip(a, b, strict=True) if x and y)
        fp += sum(1 for x, y in zip(a, b, strict=True) if x and not y)
        fn += sum(1 for x, y in zip(a, b, strict=True) if y and not x)
        same += list(a) == list(b)
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"pairs": pairs, "precision": p, "recall": r, "f1": f1, "exact": same / pairs if pairs else 0.0}


def bridge_entities(decomposed: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Next-hop record id (``question_id#idx``) -> the answers of the sub-questions it depends on."""
    out: dict[str, list[str]] = {}
    for rec in decomposed:
        answers = {sq["idx"]: str(sq.get("answer") or "") for sq in rec.get("sub_questions", [])}
        for sq in rec.get("sub_questions", []):
            deps = [answers.get(d, "") for d in sq.get("dependency") or []]
            if deps:
                out[f"{rec['id']}#{sq['idx']}"] = deps
    return out


def bridge_share(synth_dir: str | Path) -> dict[str, float]:
    """Among next-hop queries of dependent sub-questions, the share whose query contains the
    bridge entity (normalized, as a whole-word substring)."""
    root = Path(synth_dir)
    bridges = bridge_entities(read_records(root / "decomposed.jsonl"))
    queries = hits = 0
    for rec in read_records(root / "next_hop.jsonl"):
        entities = [e for e in bridges.get(str(rec["id"]), []) if normalize_answer(e)]
        if not entities:
            continue
        queries += 1
        query = f" {normalize_answer(str(rec.get('filtered_query') or rec.get('query') or ''))} "
        hits += any(f" {normalize_answer(e)} " in query for e in entities)
    return {"queries": queries, "with_bridge": hits, "share": hits / queries if queries else 0.0}

"""The tables ``benchmarks/real_llm.py`` prints: QA per method and synthesis per teacher, read back
from the run folders so ``report`` prints the same tables as the runs that wrote them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from efficientrag.baselines.cost import latency_s
from efficientrag.eval.trigger_rate import trigger_rates
from efficientrag.jsonl import read_records
from efficientrag.synth.stage_outcome import stage_outcome
from efficientrag.synth.teacher_agreement import bridge_share, label_agreement

# Retrieval-only methods; with the answer call they write to ``<name>_qa``.
ANSWER_CALL = ("direct_r", "efficientrag")
SYNTH_STAGES = ("decompose", "label", "align", "next_hop", "negatives")


def method_dir(out: Path, name: str) -> Path:
    """A method's output folder: retrieval-only methods with their answer call write to ``NAME_qa``."""
    plain = out / "eval" / name
    answered = out / "eval" / f"{name}_qa"
    return answered if name in ANSWER_CALL and not (plain / "predictions.jsonl").is_file() else plain


def read_predictions(run_dir: Path) -> list[dict[str, Any]]:
    return read_records(run_dir / "predictions.jsonl")


def counter(rec: dict[str, Any], key: str) -> float:
    return float((rec.get("counters") or {}).get(key, 0) or 0)


def print_qa_table(out: Path, methods: list[str]) -> None:
    print(
        "\n| method | n | EM | F1 | contained | format ok | LLM calls/q | gen tokens/q | retrievals/q "
        "| s/q | trigger rate (steps / questions) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in methods:
        recs = [r for r in read_predictions(method_dir(out, name)) if r.get("qa")]
        if not recs:
            continue
        n = len(recs)

        def mean(get: Any, recs: list[dict[str, Any]] = recs, n: int = n) -> float:
            return sum(get(r) for r in recs) / n

        secs = mean(lambda r: latency_s(r.get("counters") or {}))
        fmt = mean(lambda r: 0.0 if (r.get("counters") or {}).get("format_failures") else 1.0)
        steps, questions = trigger_rates(recs)
        trig = "" if steps is None else f"{steps:.2f} / {questions:.2f}"
        print(
            f"| {name} | {n} | {100 * mean(lambda r: r['qa']['em']):.1f} | {100 * mean(lambda r: r['qa']['f1']):.1f} "
            f"| {100 * mean(lambda r: r['qa']['contained']):.1f} | {100 * fmt:.0f}% "
            f"| {mean(lambda r: counter(r, 'llm_calls')):.2f} | {mean(lambda r: counter(r, 'completion_tokens')):.1f} "
            f"| {mean(lambda r: counter(r, 'retrieval_calls')):.2f} | {secs:.1f} | {trig} |"
        )


def synth_row(out: Path, dataset: str, teacher: str, wall: float) -> dict[str, Any]:
    row: dict[str, Any] = {"dataset": dataset, "teacher": teacher, "wall_s": wall}
    row["stages"] = {stage: stage_outcome(out, stage) for stage in SYNTH_STAGES}
    usage_path = out / "llm_usage.json"
    row["usage"] = json.loads(usage_path.read_text(encoding="utf-8")) if usage_path.is_file() else {}
    return row


def print_synth_tables(out: Path, rows: list[dict[str, Any]]) -> None:
    print(
        "\n| dataset | teacher | "
        + " | ".join(f"{s} kept / rejected" for s in SYNTH_STAGES)
        + " | LLM calls | prompt / completion tokens | wall s |"
    )
    print("|---|---|" + "---|" * (len(SYNTH_STAGES) + 3))
    for row in rows:
        # Every run of the folder, replies served from the response cache included (a rerun of a
        # finished folder costs nothing but still used these tokens once).
        usage = row["usage"].get("total", {})
        calls = usage.get("calls", "")
        prompt = usage.get("prompt_tokens", 0) + usage.get("cached_prompt_tokens", 0)
        completion = usage.get("completion_tokens", 0) + usage.get("cached_completion_tokens", 0)
        toks = f"{prompt:,} / {completion:,}" if usage else ""
        cells = " | ".join(
            f"{row['stages'][s]['kept']} / {row['stages'][s]['rejected']}" for s in SYNTH_STAGES
        )
        print(f"| {row['dataset']} | {row['teacher']} | {cells} | {calls} | {toks} | {row['wall_s']:.0f} |")
    print("\nreject reasons (LLM teacher):")
    for row in rows:
        if row["teacher"] == "annotations":
            continue
        for stage in SYNTH_STAGES:
            for reason, n in sorted(row["stages"][stage]["reasons"].items(), key=lambda kv: -kv[1]):
                print(f"  {row['dataset']} {stage}: {reason}: {n}")
    print(
        "\n| dataset | teacher | (question, chunk) pairs kept by both | word P | word R | word F1 "
        "| identical labels | next-hop queries with the bridge entity |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        if row["teacher"] == "annotations":
            continue
        here = out / row["dataset"] / row["teacher"]
        agree = label_agreement(here, out / row["dataset"] / "annotations")
        bridge = bridge_share(here)
        print(
            f"| {row['dataset']} | {row['teacher']} | {agree['pairs']} | {agree['precision']:.2f} "
            f"| {agree['recall']:.2f} | {agree['f1']:.2f} | {agree['exact']:.2f} "
            f"| {bridge['with_bridge']} / {bridge['queries']} |"
        )

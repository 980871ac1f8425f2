"""Distilled Labelers under the honest protocol: candidates chosen on validation
questions of the training files, the chosen student reported on dev questions no step looked at.

1. The teachers and their setting: ``retrieval_efficientrag.py``'s (trained on the three train
   files, the setting chosen on their validation questions; cached, so a run after that benchmark
   trains nothing again).
2. Recorded pairs: the teachers' loop, at that setting, over the *training-side* questions of each
   train file and its own corpus (``efficientrag.distill``; the validation questions are never
   recorded).
3. Candidates: students of ``--depths`` layers (default 2, 3, 4), each trained on the synthesized
   rows alone and on them mixed with the recorded pairs (``--pairs-ratio`` recorded rows per
   synthesized row), both for the same number of optimizer steps (the synthesized-only run's), so
   the comparison is at equal training cost (``--filter-too`` distills the Filter at the same depth;
   by default the Filter stays the teacher).
4. Choice, on validation at the teachers' setting: the shallowest candidate within the goal of the
   issue (at most ``--max-recall-drop`` recall points and ``--max-all-gold-drop`` all-gold points
   below the teachers, averaged over the training files); none within it: the best mean of recall
   and all-gold. Then the chosen student's setting is tuned again on validation (the protocol's grid).
5. Reported: every dev question of each ``--eval-on`` dataset over its own pool and the combined
   pool (and ``--open-domain N``), teachers and student side by side, with Direct-R.

    python benchmarks/distill.py --retriever bm25
    python benchmarks/distill.py --retriever bm25 --depths 2 3 --filter-too

Seconds per question are ``benchmarks/distill_cost.py``'s (one run, every variant).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from report_output import command_line
from retrieval_efficientrag import (
    DATASETS,
    DEV_FILES,
    ProtocolOptions,
    choose,
    load_rag,
    open_domain_report,
    open_pool,
    parse_protocol_args,
    protocol_options_arguments,
    protocol_parser,
    quick_config,
    report_on,
    run_setting,
    train,
    validation_examples,
)

DEPTHS = (2, 3, 4)


def candidate_name(depth: int, pairs: bool) -> str:
    return f"L{depth}" + ("+pairs" if pairs else "")


def pick(
    scores: dict[str, dict[str, float]],
    teacher: dict[str, float],
    max_recall_drop: float,
    max_all_gold_drop: float,
) -> tuple[str, str]:
    """The chosen candidate and why. ``scores``: candidate -> {"recall", "all_gold", "depth"} means
    over the training files' validation questions; ``teacher``: the same for the teachers.

    The shallowest candidate within both drops wins (ties: the higher mean of recall and all-gold);
    with none within them, the highest mean, said so."""

    def mean(s: dict[str, float]) -> float:
        return (s["recall"] + s["all_gold"]) / 2

    within = [
        name
        for name, s in scores.items()
        if teacher["recall"] - s["recall"] <= max_recall_drop
        and teacher["all_gold"] - s["all_gold"] <= max_all_gold_drop
    ]
    if within:
        best = min(within, key=lambda n: (scores[n]["depth"], -mean(scores[n])))
        return (
            best,
            f"shallowest within {max_recall_drop} recall / {max_all_gold_drop} all-gold points of the teachers",
        )
    best = max(scores, key=lambda n: mean(scores[n]))
    return best, "no candidate within the goal: the best mean of recall and all-gold"


def models_folder(root: Path, labeler: Path, filter_: Path) -> Path:
    """A folder with ``labeler/best`` and ``filter/best`` (what the protocol's helpers load),
    pointing at the given model folders."""
    for kind, target in (("labeler", labeler), ("filter", filter_)):
        link = root / kind / "best"
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() and Path(os.readlink(link)) != target.resolve():
            link.unlink()
        if not link.exists():
            link.symlink_to(target.resolve(), target_is_directory=True)
    return root


def distill_config(args: argparse.Namespace, teachers: Path, overrides: list[str]) -> Any:
    """The job's settings: the teachers, their training set, the chosen loop setting, the preset."""
    from efficientrag.config import load_config
    from efficientrag.distill.config import DistillConfig

    preset = Path(__file__).resolve().parents[1] / "configs" / "distill" / "minilm-cpu.yaml"
    cfg = load_config(
        DistillConfig,
        preset,
        [
            f"work_dir={teachers / 'distill'}",
            f"labeler={teachers / 'labeler' / 'best'}",
            f"filter={teachers / 'filter' / 'best'}",
            f"train_data={teachers / 'train_data'}",
            f"retriever.kind={args.retriever}",
            f"progress={not args.quiet}",
            f"mix.labeler_ratio={args.pairs_ratio}",
            f"mix.filter_ratio={args.pairs_ratio}",
            *[f"efficientrag.{o}" for o in overrides],
            *args.distill_overrides,
        ],
    )
    cfg.check()
    return cfg


def record_pairs(cfg: Any, opts: ProtocolOptions, work: Path, pools: dict[str, Any]) -> list[Path]:
    """The teachers' loop over each train file's training-side questions, on its own corpus."""
    from efficientrag.adapt.self_training import Question
    from efficientrag.distill.job import pairs_stage

    teachers = {"labeler": Path(cfg.labeler), "filter": Path(cfg.filter)}
    held = {
        name: {ex.id for ex in validation_examples(pool, quick_config(work, name, opts))}
        for name, pool in pools.items()
    }
    rows = []
    for name, pool in pools.items():
        questions = [Question(ex.id, ex.question) for ex in pool.examples if ex.id not in held[name]]
        folder, counts = pairs_stage(
            cfg,
            Path(cfg.work_dir),
            teachers,
            questions=questions,
            corpus=pool.corpus,
            retriever=pool.retriever,
        )
        if not opts.quiet:
            print(f"{name}: recorded pairs {counts}", file=sys.stderr)
        rows.append(folder)
    return rows


def train_candidates(cfg: Any, args: argparse.Namespace, rows: list[Path]) -> dict[str, dict[str, Any]]:
    """Every (depth, with/without pairs) student; returns name -> {labeler, filter, depth, pairs}."""
    from efficientrag.distill.job import inputs_of, mix_stage, train_student

    teachers = {"labeler": Path(cfg.labeler), "filter": Path(cfg.filter)}
    inputs = inputs_of(cfg, teachers)
    mixed, _ = mix_stage(cfg, Path(cfg.work_dir), inputs, rows)
    out = {}
    for depth in args.depths:
        for pairs in (False, True):
            dcfg = replace(cfg, depth=depth, layers=[])
            data = mixed if pairs else Path(cfg.train_data)
            models = dict(teachers)
            kinds = ("labeler", "filter") if args.filter_too else ("labeler",)
            for kind in kinds:
                if pairs:
                    dcfg = equal_steps(dcfg, kind)
                folder, _ = train_student(dcfg, kind, teachers, inputs, data, Path(cfg.work_dir))
                models[kind] = folder / "best"
            out[candidate_name(depth, pairs)] = {**models, "depth": depth, "pairs": pairs}
    return out


def equal_steps(cfg: Any, kind: str) -> Any:
    """``cfg`` with ``kind``'s student trained for as many optimizer steps as it takes on the
    synthesized rows alone: a candidate with recorded pairs sees other rows, not more of them."""
    attr = f"{kind}_train"
    tcfg = getattr(cfg, attr)
    with (Path(cfg.train_data) / kind / "train.jsonl").open(encoding="utf-8") as fh:
        rows = sum(1 for line in fh if line.strip())
    steps = math.ceil(rows / (tcfg.batch_size * tcfg.grad_accumulation)) * tcfg.epochs
    return replace(cfg, **{attr: replace(tcfg, max_steps=tcfg.max_steps or steps)})


def validation_scores(
    opts: ProtocolOptions,
    work: Path,
    models: Path,
    pools: dict[str, Any],
    label: str,
    overrides: list[str],
    quantize: str = "none",
) -> dict[str, float]:
    """Mean recall and all-gold over the training files' validation questions at one setting
    (the models in float32, or on ``quantize``'s path)."""
    per = []
    folder = "validation" if quantize == "none" else f"validation-{quantize}"
    for name, pool in pools.items():
        cfg = quick_config(work, name, opts)
        rag = load_rag(pool, models, quantize)
        res = run_setting(
            pool,
            rag,
            validation_examples(pool, cfg),
            label,
            [*overrides, f"quantize={quantize}"],
            models / folder / name,
            cfg,
        )
        per.append(res["retrieval"]["all"])
    return {k: sum(r[k] for r in per) / len(per) for k in ("recall", "all_gold", "num_chunks")}


def main(argv: list[str] | None = None) -> int:
    parser = protocol_parser(__doc__)
    protocol_options_arguments(parser, retriever="bm25")
    parser.add_argument("--depths", type=int, nargs="+", default=list(DEPTHS))
    parser.add_argument("--filter-too", action="store_true", help="distill the Filter at the same depth")
    pairs_help = "recorded rows per synthesized row (the +pairs candidates)"
    parser.add_argument("--pairs-ratio", type=float, default=1.0, help=pairs_help)
    parser.add_argument("--distill-overrides", nargs="*", default=[], help="efficientrag distill key=value")
    parser.add_argument("--max-recall-drop", type=float, default=1.0)
    parser.add_argument("--max-all-gold-drop", type=float, default=2.0)
    args = parse_protocol_args(parser, argv)
    t0 = time.perf_counter()
    opts = ProtocolOptions.from_args(args)
    work = Path(args.work_dir) / args.retriever
    train_on = [d for d in args.train_on.split(",") if d]
    eval_on = [d for d in args.eval_on.split(",") if d]
    teachers, _, pools = train(opts, work, train_on)
    t_label, t_overrides, _ = choose(opts, work, teachers, pools)
    cfg = distill_config(args, teachers, t_overrides)
    rows = (
        record_pairs(cfg, opts, work, pools) if cfg.mix.labeler_ratio > 0 or cfg.mix.filter_ratio > 0 else []
    )
    candidates = train_candidates(cfg, args, rows)
    folders = {
        name: models_folder(Path(cfg.work_dir) / "candidates" / name, c["labeler"], c["filter"])
        for name, c in candidates.items()
    }
    teacher_val = validation_scores(opts, work, teachers, pools, t_label, t_overrides)
    scores = {
        name: {
            **validation_scores(opts, work, folder, pools, t_label, t_overrides),
            "depth": candidates[name]["depth"],
        }
        for name, folder in folders.items()
    }
    chosen, why = pick(scores, teacher_val, args.max_recall_drop, args.max_all_gold_drop)
    s_label, s_overrides, _ = choose(opts, work, folders[chosen], pools)  # re-tuned on validation
    dtypes = {  # float32 against bf16 on validation: is `quantize: auto` a safe default?
        who: {q: validation_scores(opts, work, models, pools, label, overrides, q) for q in ("none", "bf16")}
        for who, models, label, overrides in (
            ("teachers", teachers, t_label, t_overrides),
            (f"student {chosen}", folders[chosen], s_label, s_overrides),
        )
    }
    results = dev_report(
        opts,
        work,
        train_on,
        eval_on,
        teachers,
        folders[chosen],
        (t_label, t_overrides),
        (s_label, s_overrides),
    )
    report = render(
        args, teacher_val, scores, chosen, why, (t_label, t_overrides), (s_label, s_overrides), results
    )
    report += "\n\n" + dtype_table(dtypes)
    report += f"\n\nWall time: {time.perf_counter() - t0:.0f} s."
    out = Path(cfg.work_dir)
    (out / "results.md").write_text(report, encoding="utf-8")
    summary = {
        "teacher_setting": [t_label, t_overrides],
        "student_setting": [s_label, s_overrides],
        "chosen": chosen,
        "student": {k: str(candidates[chosen][k]) for k in ("labeler", "filter")},
        "validation": {"teacher": teacher_val, "candidates": scores, "dtypes": dtypes},
        "dev": results,
    }
    (out / "results.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    print(report)
    return 0


def dev_report(
    opts: ProtocolOptions,
    work: Path,
    train_on: list[str],
    eval_on: list[str],
    teachers: Path,
    student: Path,
    t_setting: tuple[str, list[str]],
    s_setting: tuple[str, list[str]],
) -> dict[str, dict[str, Any]]:
    """Teachers and student, each at its own chosen setting, on every dev question."""
    pools = {
        name: open_pool(f"dev-{name}", [(name, DEV_FILES[name])], work / "pools", opts) for name in eval_on
    }
    if not opts.no_combined:
        pools["combined"] = open_pool(
            "dev-combined", [(d, DEV_FILES[d]) for d in DATASETS], work / "pools", opts
        )
    results: dict[str, dict[str, Any]] = {}
    for pool_name, pool in pools.items():
        for who, models, (label, overrides) in (
            ("teacher", teachers, t_setting),
            ("student", student, s_setting),
        ):
            rag = load_rag(pool, models)
            for name in eval_on if pool_name == "combined" else [pool_name]:
                out = models / ("dev-combined" if pool_name == "combined" else "dev") / name
                res = report_on(pool, rag, label, overrides, out, opts, name)
                results.setdefault(f"{name} ({pool_name} pool)", {})[who] = res
    if opts.open_domain:
        for who, models, (label, overrides) in (
            ("teacher", teachers, t_setting),
            ("student", student, s_setting),
        ):
            name, by_pool = open_domain_report(opts, work, models, label, overrides, train_on)
            for pool_name, res in by_pool.items():
                results.setdefault(f"{name}, {pool_name}", {})[who] = res
    return results


def dtype_table(dtypes: dict[str, dict[str, dict[str, float]]]) -> str:
    """float32 against bf16 on the validation questions, each model at its own chosen setting."""
    lines = [
        "float32 against bf16 (`quantize: bf16`) on the validation questions, each at its chosen setting:",
        "",
        "| model | dtype | recall | all-gold | chunks |",
        "|---|---|---:|---:|---:|",
    ]
    for who, by in dtypes.items():
        for q, s in by.items():
            name = "float32" if q == "none" else q
            lines.append(
                f"| {who} | {name} | {s['recall']:.2f} | {s['all_gold']:.2f} | {s['num_chunks']:.2f} |"
            )
    return "\n".join(lines)


def render(args, teacher_val, scores, chosen, why, t_setting, s_setting, results) -> str:
    lines = [
        f"Distilled Labelers, {args.retriever}; teachers' setting {t_setting[0]}: {' '.join(t_setting[1])}",
        "",
        "Validation questions of the training files (mean over files), at the teachers' setting:",
        "",
        "| model | layers | recorded pairs | recall | all-gold | chunks | Δ recall | Δ all-gold |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
        f"| teachers | 6 | - | {teacher_val['recall']:.2f} | {teacher_val['all_gold']:.2f} "
        f"| {teacher_val['num_chunks']:.2f} | | |",
    ]
    for name, s in scores.items():
        mark = " (chosen)" if name == chosen else ""
        lines.append(
            f"| {name}{mark} | {s['depth']} | {'yes' if name.endswith('+pairs') else 'no'} | {s['recall']:.2f} "
            f"| {s['all_gold']:.2f} | {s['num_chunks']:.2f} | {s['recall'] - teacher_val['recall']:+.2f} "
            f"| {s['all_gold'] - teacher_val['all_gold']:+.2f} |"
        )
    lines += [
        "",
        f"Chosen: {chosen} ({why}); its setting re-tuned on validation: {s_setting[0]}: {' '.join(s_setting[1])}",
        "",
        "Dev questions (never looked at by any step):",
        "",
        "| questions | Direct-R@7 recall | teachers recall | all-gold | chunks | student recall | all-gold | chunks |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for where, by in results.items():
        t, s = (
            by["teacher"]["efficientrag"]["retrieval"]["all"],
            by["student"]["efficientrag"]["retrieval"]["all"],
        )
        direct = by["teacher"]["direct"]["retrieval"]["7"]["recall"]
        lines.append(
            f"| {where} | {direct:.2f} | {t['recall']:.2f} | {t['all_gold']:.2f} | {t['num_chunks']:.2f} "
            f"| {s['recall']:.2f} | {s['all_gold']:.2f} | {s['num_chunks']:.2f} |"
        )
    cmd = command_line(__file__)
    lines += ["", f"Rerun: `{cmd.strip()}`"]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())

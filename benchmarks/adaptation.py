"""Adaptation without gold, measured leave-one-dataset-out, beside Direct-R's curve.

For each left-out dataset T (HotpotQA, 2Wiki, MuSiQue):

1. The un-adapted models: Labeler and Filter trained on the *other two* train files and the
   EfficientRAG setting chosen on their validation questions: exactly
   ``retrieval_efficientrag.py --train-on <others> --eval-on T`` (its cached models and choice).
2. Option 1, the corpus: ``efficientrag adapt`` with T's pooled *dev corpus* (paragraphs only)
   and the original training set; candidates differ in the mix ratio (``--ratios``, default the
   preset's ``mix.ratios``), and adapt fine-tunes and chooses among them itself, scoring them as
   below (``efficientrag.adapt.choice``).
3. Option 2, unlabeled questions: T's *train* questions, text only (no answer, no decomposition,
   no supporting fact is read), over the pooled paragraphs of T's train file; self-training
   candidates differ in the Continue threshold and in whether the corpus's title links must
   agree with the models' confidence (``self_train.agreement``).
4. Both: option 1's chosen ratio, then self-training at option 2's chosen threshold and agreement.
5. The in-domain models (all three train files, setting chosen on their validation questions)
   as the ceiling.

Every candidate is scored on (a) the validation questions of the two training files, each over
its own corpus, and (b) pseudo-validation questions mined from T's dev corpus (held-out chains
with their chunks as gold): score = mean of (a)'s and (b)'s (recall + all-gold) / 2, with the
un-adapted models' EfficientRAG setting. The best candidate of each option is reported on every
dev question of T. T's dev questions and gold choose nothing.

    python benchmarks/adaptation.py                      # all three targets
    python benchmarks/adaptation.py --targets hotpotqa   # one

Everything is cached (models of the protocol under ``--work-dir``, adaptation runs and their
evaluations under ``--adapt-dir``, in folders keyed by the models' digest): a rerun redoes only
what is missing. Each target's report goes to ``--adapt-dir/<retriever>/<target>/report.md``
(a run of one target leaves the others' reports alone) and this run's targets together to
``--adapt-dir/<retriever>/adaptation.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import adaptation_methods as am  # adapt's retrieval method choice, rendered
import retrieval_efficientrag as rb  # the protocol benchmark: models, choice, report
from report_output import command_line

from efficientrag.eval import versus_direct
from efficientrag.eval.gold_fate import fate_cells, fate_table_head
from efficientrag.eval.interrupts import main_reporting_interrupts

REPO = Path(__file__).resolve().parents[1]
PRESET = REPO / "configs" / "adapt" / "minilm-cpu.yaml"
CONTINUE_THRESHOLDS = (0.3, 0.6)
AGREEMENTS = ("none", "links")  # option 2: the models' confidence alone, or also the corpus's links
GOAL_SHARE = 0.5  # of the in-domain gain over Direct-R at equal chunks: the goal a gain is read against


@dataclass
class Variant:
    """One set of models with its evaluations."""

    name: str
    labeler: Path
    filter: Path
    validation: dict[str, dict[str, float]] = field(default_factory=dict)
    score: float = 0.0
    dev: dict[str, Any] | None = None
    adapt: dict[str, Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    note: str = ""


def protocol_options(args: argparse.Namespace) -> rb.ProtocolOptions:
    """The options ``retrieval_efficientrag.py --retriever R --no-combined`` runs with."""
    return rb.ProtocolOptions(
        shared_data=args.shared_data, retriever=args.retriever, no_combined=True, quiet=args.quiet
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shared-data", default=str(rb.DEFAULT_SHARED))
    parser.add_argument(
        "--work-dir", default=str(REPO / "runs" / "bench_protocol"), help="the protocol's cache"
    )
    parser.add_argument("--adapt-dir", default=str(REPO / "runs" / "bench_adapt"))
    parser.add_argument("--targets", default=",".join(rb.DATASETS))
    parser.add_argument(
        "--retriever",
        choices=("bm25", "dense"),
        default="bm25",
        help="the protocol's retriever (its models and choices are reused from --work-dir/<retriever>)",
    )
    parser.add_argument("--preset", default=str(PRESET))
    parser.add_argument(
        "--ratios", type=float, nargs="+", help="option 1 mix ratios (default: the preset's mix.ratios)"
    )
    parser.add_argument(
        "--continue-thresholds", type=float, nargs="+", default=list(CONTINUE_THRESHOLDS), help="option 2"
    )
    parser.add_argument(
        "--agreements", nargs="+", default=list(AGREEMENTS), choices=AGREEMENTS, help="option 2"
    )
    parser.add_argument(
        "--original-rows", type=int, default=2000, help="original Labeler rows kept per fine-tune"
    )
    parser.add_argument("--no-self-training", action="store_true", help="option 1 only")
    parser.add_argument("--quiet", action="store_true")
    args = rb.parse_protocol_args(parser, argv)
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = [t for t in targets if t not in rb.DATASETS]
    if unknown:
        parser.error(f"unknown target(s) {unknown}; choose from {list(rb.DATASETS)}")
    out = Path(args.adapt_dir) / args.retriever
    out.mkdir(parents=True, exist_ok=True)
    reports = []
    for target in targets:
        reports.append(run_target(args, target))
        # Written after every target, so a stopped run still shows what it finished.
        (out / target / "report.md").write_text(_header(args) + reports[-1], encoding="utf-8")
        (out / "adaptation.md").write_text(_header(args) + "\n\n".join(reports), encoding="utf-8")
    print(_header(args) + "\n\n".join(reports))
    return 0


def run_target(args: argparse.Namespace, target: str) -> str:
    from efficientrag.adapt.config import AdaptConfig
    from efficientrag.adapt.job import build_judge, pseudo_stage
    from efficientrag.data.corpus import Corpus

    t0 = time.perf_counter()
    pargs = protocol_options(args)
    work = Path(args.work_dir) / args.retriever
    others = [d for d in rb.DATASETS if d != target]
    models, counts, pools = rb.train(pargs, work, others)
    label, overrides, validation = rb.choose(pargs, work, models, pools)
    dev = rb.open_pool(f"dev-{target}", [(target, rb.DEV_FILES[target])], work / "pools", pargs)
    root = Path(args.adapt_dir) / args.retriever / target
    root.mkdir(parents=True, exist_ok=True)
    base = adapt_config(pargs, args.preset, work, models, target, overrides, root / "adapt")
    base = replace(
        base,
        mix=replace(base.mix, original_rows=args.original_rows, ratios=args.ratios or base.mix.ratios),
    )
    ratios = [r.labeler for r in base.mix.candidates()]
    # Pseudo-validation questions from the target's dev corpus (the same for every candidate).
    corpus = Corpus.load(base.corpus)
    pseudo_dir, pseudo_stats = pseudo_stage(base, corpus, root / "adapt", corpus.fingerprint())
    # Scored as `efficientrag adapt` scores its candidates (efficientrag/adapt/choice.py), on its
    # pseudo-validation questions and, here, the training files' validation questions as well.
    sets = validation_sets(pargs, work, pools)
    judge = build_judge(base, corpus, pseudo_dir, sets)

    def evaluate(variant: Variant) -> Variant:
        scored = judge.score({"labeler": variant.labeler, "filter": variant.filter})
        variant.validation, variant.score = dict(scored.sets), scored.score
        return variant

    def report(variant: Variant) -> Variant:
        tag = _digest(variant.labeler, variant.filter)
        variant.dev = rb.report_on(
            dev, _rag(dev, variant), label, overrides, root / "evals" / tag / "dev", pargs, target
        )
        return variant

    def adapt(cfg: AdaptConfig) -> dict[str, Any]:
        from efficientrag.adapt.job import run_adapt

        return run_adapt(cfg, extra_sets=sets)

    def variant(name: str, summary: dict[str, Any], **params: Any) -> Variant:
        # The adapted models, also where adapt keeps the given ones (they scored higher): the
        # benchmark reports every candidate.
        models = summary["adapted"]
        return Variant(name, Path(models["labeler"]), Path(models["filter"]), adapt=summary, params=params)

    unadapted = report(evaluate(Variant("un-adapted", Path(base.labeler), Path(base.filter))))
    # The ceiling before the options: a run stopped part way already has it beside the un-adapted models.
    in_models, _, in_pools = rb.train(pargs, work, list(rb.DATASETS))
    in_label, in_overrides, _ = rb.choose(pargs, work, in_models, in_pools)
    in_domain = Variant("in-domain (ceiling)", in_models / "labeler" / "best", in_models / "filter" / "best")
    in_domain.dev = rb.report_on(
        dev, _rag(dev, in_domain), in_label, in_overrides, in_models / "dev" / target, pargs, target
    )
    in_domain.note = f"its own chosen setting `{in_label}`"
    candidates: dict[str, list[Variant]] = {"corpus": [], "self": []}
    # Option 1: adapt fine-tunes every candidate ratio and chooses among them itself.
    summary = adapt(base)
    stage = summary["stages"]["corpus"]
    for cand in stage.get("candidates") or [{**stage, "labeler": base.mix.candidates()[0].labeler}]:
        one = dict(
            summary, adapted={k: str(Path(cand["folder"]) / k / "best") for k in ("labeler", "filter")}
        )
        one["timings_s"] = {"pseudo_rows": summary["timings_s"]["pseudo_rows"]}
        one["timings_s"]["finetune_corpus"] = cand.get("finetune_s", summary["timings_s"]["finetune_corpus"])
        one["stages"] = {"corpus": {**stage, **cand}}
        ratio = cand["labeler"]
        candidates["corpus"].append(evaluate(variant(f"corpus ratio {ratio}", one, ratio=ratio)))
    kept = _digest(Path(summary["labeler"]), Path(summary["filter"]))
    dev_questions = [ex for ex in dev.examples if rb.dataset_of(ex) == target]
    methods = am.method_lines(summary, dev.retriever, dev_questions, root / "evals" / kept / "methods")
    if candidates["corpus"]:  # option 1's dev numbers before option 2's hours (reported again below, cached)
        report(max(candidates["corpus"], key=lambda x: x.score))
    questions = qcorpus = None
    if not args.no_self_training:
        questions, qcorpus = _train_questions(pargs, work, target, root)
        for agreement in args.agreements:
            for threshold in args.continue_thresholds:
                st = replace(
                    base.self_train, continue_threshold=threshold, agreement=agreement, corpus=str(qcorpus)
                )
                cfg = replace(base, from_corpus=False, questions=str(questions), self_train=st)
                cfg = replace(cfg, mix=replace(cfg.mix, ratios=[max(ratios)]))
                name = f"self-training continue>={threshold}{_links_tag(agreement)}"
                candidates["self"].append(
                    evaluate(variant(name, adapt(cfg), threshold=threshold, agreement=agreement))
                )
    chosen = {k: max(v, key=lambda x: x.score) for k, v in candidates.items() if v}
    for variant in chosen.values():
        report(variant)
    if "corpus" in chosen and "self" in chosen:
        ratio, threshold = chosen["corpus"].params["ratio"], chosen["self"].params["threshold"]
        agreement = chosen["self"].params["agreement"]
        st = replace(base.self_train, continue_threshold=threshold, agreement=agreement, corpus=str(qcorpus))
        cfg = replace(
            base,
            questions=str(questions),
            self_train=st,
            mix=replace(base.mix, ratios=[ratio]),
        )
        name = f"both (ratio {ratio}, continue>={threshold}{_links_tag(agreement)})"
        chosen["both"] = report(evaluate(variant(name, adapt(cfg))))
    page = render(
        target,
        others,
        label,
        overrides,
        unadapted,
        candidates,
        chosen,
        in_domain,
        pseudo_stats,
        counts,
        time.perf_counter() - t0,
    )
    # adapt's retrieval method choice for option 1's kept models, after the models' own report.
    return page + ("\n" + "\n".join(methods) + "\n" if methods else "")


def adapt_config(
    pargs: rb.ProtocolOptions,
    preset: str | Path,
    work: Path,
    models: Path,
    target: str,
    overrides: list[str],
    work_dir: Path,
) -> Any:
    """The ``AdaptConfig`` that adapts a direction's ``models`` (the protocol's, under ``work``) to
    ``target``'s pooled dev corpus (paragraphs only), scoring with the loop of ``overrides``.

    Args:
        pargs: the protocol's options (``retriever``, ``quiet``).
        preset: the adapt preset (``configs/adapt/minilm-cpu.yaml``).
        work: the protocol's folder for this retriever (its pools).
        models: the direction's folder (``labeler/best``, ``filter/best``, ``train_data``).
        target: the left-out dataset.
        overrides: the loop setting's overrides.
        work_dir: adapt's own folder.
    """
    from efficientrag.adapt.config import AdaptConfig
    from efficientrag.config import load_config

    base = load_config(AdaptConfig, preset, [f"retriever.kind={pargs.retriever}"])
    return replace(
        base,
        corpus=str(work / "pools" / f"dev-{target}" / "data" / "corpus.jsonl"),
        labeler=str(models / "labeler" / "best"),
        filter=str(models / "filter" / "best"),
        train_data=str(models / "train_data"),
        progress=not pargs.quiet,
        efficientrag=_loop_config(overrides),
        work_dir=str(work_dir),
    )


def validation_sets(pargs: rb.ProtocolOptions, work: Path, pools: dict[str, Any]) -> list[Any]:
    """The training files' validation questions, each over its own pool, as adapt scoring sets."""
    from efficientrag.adapt.choice import VALIDATION_GROUP, ScoringSet

    return [
        ScoringSet(
            name,
            VALIDATION_GROUP,
            pool.retriever,
            rb.validation_examples(pool, rb.quick_config(work, name, pargs)),
        )
        for name, pool in pools.items()
    ]


# -- evaluation plumbing -----------------------------------------------------------------------


def _loop_config(overrides: list[str]) -> Any:
    from efficientrag.config import load_config
    from efficientrag.pipeline.config import EfficientRAGConfig

    return load_config(EfficientRAGConfig, None, overrides)


def _rag(pool: Any, variant: Variant) -> Any:
    from efficientrag.models import Filter, Labeler
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.pipeline.prediction_cache import CachedPredictor

    lab = CachedPredictor(Labeler.from_pretrained(variant.labeler))
    fil = CachedPredictor(Filter.from_pretrained(variant.filter))
    return EfficientRAG(pool.retriever, lab, fil)


def _digest(labeler: Path, filt: Path) -> str:
    from efficientrag.fingerprint import file_digest

    return file_digest([labeler / "model.safetensors", filt / "model.safetensors"])[:12]


def _train_questions(pargs: rb.ProtocolOptions, work: Path, target: str, root: Path) -> tuple[Path, Path]:
    """The target's train questions, text only, and the pooled paragraphs they were asked over."""
    from efficientrag.jsonl import write_jsonl

    pool = rb.open_pool(f"train-{target}", [(target, rb.TRAIN_FILES[target])], work / "pools", pargs)
    path = root / "train_questions.jsonl"
    write_jsonl(path, ({"id": ex.id, "question": ex.question} for ex in pool.examples))
    return path, work / "pools" / f"train-{target}" / "data" / "corpus.jsonl"


# -- report ------------------------------------------------------------------------------------


_RETRIEVERS = {"bm25": "BM25", "dense": "MiniLM + FAISS Flat"}


def _header(args: argparse.Namespace) -> str:
    cmd = command_line(__file__)
    load = os.getloadavg()
    return (
        f"# Adaptation without gold, leave one dataset out ({_RETRIEVERS[args.retriever]})\n\n"
        f"Command: `{cmd.strip()}` (machine load average at the end: {load[0]:.1f} on {os.cpu_count()} cores)\n\n"
    )


def _links_tag(agreement: str) -> str:
    return ", links" if agreement == "links" else ""


def _gain(v: versus_direct.Versus) -> tuple[float, float]:
    if not v.direct_same_k:
        return float("nan"), float("nan")
    return v.ours["recall"] - v.direct_same_k["recall"], v.ours["all_gold"] - v.direct_same_k["all_gold"]


def render(
    target, others, label, overrides, unadapted, candidates, chosen, in_domain, pseudo_stats, counts, seconds
):
    rows = [("un-adapted (trained on " + " + ".join(others) + ")", unadapted)]
    names = {"corpus": "option 1: corpus", "self": "option 2: self-training", "both": "options 1 + 2"}
    rows += [(f"{names[k]} ({v.name})", v) for k, v in chosen.items()]
    rows.append((in_domain.name, in_domain))
    ceiling = _gain(versus_direct.versus(in_domain.dev["direct"], in_domain.dev["efficientrag"]))
    lines = [
        f"## {target} left out",
        "",
        f"Models trained on {', '.join(others)} (Labeler {counts['labeler']['train']} rows); setting "
        f"`{label}` = `{','.join(overrides)}`, chosen on their validation questions and used for every "
        f"adapted model. Reported: every {target} dev question ({unadapted.dev['efficientrag']['retrieval']['all']['n']}) "
        f"over its pooled dev corpus. (This run: {seconds / 60:.0f} min; a stage an earlier run finished "
        "was reused, its own seconds are in the table of rows and time.)",
        "",
        "### Dev questions, at equal chunk counts",
        "",
        "| models | K | recall | all-gold | answer recall | Direct-R at K: recall / all-gold | gain over Direct-R: recall / all-gold | share of the in-domain gain |",
        "|---|---:|---:|---:|---:|---|---|---|",
    ]
    fates = []
    for name, v in rows:
        vs = versus_direct.versus(v.dev["direct"], v.dev["efficientrag"])
        g = _gain(vs)
        share = " / ".join(f"{100 * a / b:.0f}%" if b > 0 else "n/a" for a, b in zip(g, ceiling, strict=True))
        same = (
            " / ".join(f"{vs.direct_same_k[m]:.2f}" for m in ("recall", "all_gold"))
            if vs.direct_same_k
            else "outside"
        )
        lines.append(
            f"| {name} | {vs.chunks:.2f} | {vs.ours['recall']:.2f} | {vs.ours['all_gold']:.2f} | "
            f"{vs.ours['answer_recall']:.2f} | {same} | {g[0]:+.2f} / {g[1]:+.2f} | {share} |"
        )
        fates.append(f"| {name} | {v.dev['fate']['gold']} | " + " | ".join(fate_cells(v.dev["fate"])) + " |")
    d = unadapted.dev["direct"]["retrieval"]
    lines += [
        "",
        "Direct-R: "
        + "; ".join(
            f"@{k} {d[str(k)]['recall']:.2f} / {d[str(k)]['all_gold']:.2f}" for k in rb.KS if str(k) in d
        ),
        "",
        "### Where the gold chunks went (dev)",
        "",
        *fate_table_head("models"),
        *fates,
        "",
        "### The choice (validation: the training files' questions and the target corpus's pseudo questions)",
        "",
        "| candidate | "
        + " | ".join(f"{n} recall / all-gold / K" for n in unadapted.validation)
        + " | score | chosen |",
        "|---|" + "---|" * len(unadapted.validation) + "---:|---|",
    ]
    every = [("un-adapted", unadapted)] + [(v.name, v) for vs in candidates.values() for v in vs]
    if "both" in chosen:
        every.append((chosen["both"].name, chosen["both"]))
    picked = {id(v) for v in chosen.values()}
    for name, v in every:
        cells = [
            f"{r['recall']:.1f} / {r['all_gold']:.1f} / {r['num_chunks']:.2f}" for r in v.validation.values()
        ]
        mark = "yes" if id(v) in picked else ""
        if id(v) in picked and v.score <= unadapted.score:
            mark += " (not above un-adapted)"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {v.score:.2f} | {mark} |")
    lines += ["", "### Rows and time (wall clock on this machine, shared with other jobs)", ""]
    lines += [
        f"Pseudo questions from the dev corpus: {json.dumps(pseudo_stats['questions'])} "
        f"({pseudo_stats['links']} title links among {pseudo_stats['corpus_chunks']} chunks; rejects "
        f"{json.dumps(pseudo_stats['rejects'])}); rows {json.dumps(pseudo_stats['rows'])}.",
        "",
        "| adaptation | stage | seconds | rows (labeler train: original + adaptation; filter) |",
        "|---|---|---:|---|",
    ]
    for name, v in [(v.name, v) for vs in candidates.values() for v in vs] + (
        [(chosen["both"].name, chosen["both"])] if "both" in chosen else []
    ):
        summary = v.adapt or {}
        for stage, secs in summary.get("timings_s", {}).items():
            info = _stage_rows(summary, stage)
            lines.append(f"| {name} | {stage} | {secs:.0f} | {info} |")
    goal = _goal_line(target, rows, ceiling)
    lines += ["", goal, ""]
    return "\n".join(lines)


def _stage_rows(summary: dict[str, Any], stage: str) -> str:
    key = "corpus" if stage in ("pseudo_rows", "finetune_corpus") else f"self{stage.rsplit('_', 1)[-1]}"
    st = summary.get("stages", {}).get(key, {})
    if stage.startswith("finetune") and "mix" in st:
        lab, fil = st["mix"]["labeler"]["train"], st["mix"]["filter"]["train"]
        return f"{lab['original']} + {lab['adaptation']}; {fil['original']} + {fil['adaptation']}"
    if stage.startswith("self_decisions"):
        return json.dumps(st.get("rows", {}))
    return json.dumps(st.get("rows", {}).get("labeler", {})) if st else ""


def _goal_line(target: str, rows: list, ceiling: tuple[float, float]) -> str:
    out = []
    base = _gain(versus_direct.versus(rows[0][1].dev["direct"], rows[0][1].dev["efficientrag"]))
    for name, v in rows[1:-1]:
        g = _gain(versus_direct.versus(v.dev["direct"], v.dev["efficientrag"]))
        if target == "2wikimultihopqa":
            ok = g[0] >= base[0] and g[1] >= base[1]
            out.append(f"{name}: {'not worse' if ok else 'worse'} than un-adapted")
        else:
            ok = all(c > 0 and x >= GOAL_SHARE * c for x, c in zip(g, ceiling, strict=True))
            out.append(f"{name}: {'reaches' if ok else 'misses'} half the in-domain gain")
    return "Goal: " + "; ".join(out) + "."


if __name__ == "__main__":
    sys.exit(main_reporting_interrupts(main))

"""TreeHop beside EfficientRAG and Direct-R on one dense index (all-MiniLM-L6-v2 + FAISS Flat),
under the honest protocol of ``benchmarks/retrieval_efficientrag.py``.

Protocol (printed with the results):

1. Training questions: the train files in ``../shared/data`` (HotpotQA 299, 2WikiMultihopQA 200,
   MuSiQue 200; ``--train-on`` picks which), each pooled into its own corpus and dense index, the
   same pools and the same validation split (25% by id hash, seed 1) as EfficientRAG's synthesis.
2. One TreeHop network trained on the training side of all of them (``configs/treehop/minilm-cpu.yaml``);
   its epoch chosen by the tree search on the validation questions.
3. K and hops chosen on the validation questions, each over its own corpus: of TreeHop@5/@10 with
   2/3 hops, the one with the largest gain over Direct-R at the same chunk count (mean over the
   training files of the recall and all-gold differences).
4. Reported: every dev question of each evaluated dataset over its pooled dev corpus (and over the
   combined pool of the three): Direct-R's curve, EfficientRAG (the models and setting that
   ``retrieval_efficientrag.py --retriever dense`` trained and chose under the same rules), all
   four TreeHop settings, the official code's pruning rule as a diagnostic, and, for reference,
   Direct-R and EfficientRAG over BM25 (labelled; their index is another one).

    python benchmarks/retrieval_efficientrag.py --retriever dense        # EfficientRAG's dense rows, first
    python benchmarks/retrieval_treehop.py
    python benchmarks/retrieval_treehop.py --train-on 2wikimultihopqa,musique --eval-on hotpotqa --no-combined

Everything is cached under ``--work-dir`` (the same folder as the EfficientRAG benchmark); TreeHop
evaluations sit under the fingerprint of the model they used, so a retrained model never reuses
them. Seconds per question, side by side: ``benchmarks/treehop_latency.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import treehop_combination as combination
from report_output import command_line
from retrieval_efficientrag import (
    DATASETS,
    DEV_FILES,
    REPO,
    TRAIN_FILES,
    Pool,
    ProtocolOptions,
    dataset_names,
    open_pool,
    parse_protocol_args,
    protocol_parser,
    quick_config,
    validation_examples,
)
from treehop_tables import render

from efficientrag.eval.interrupts import main_reporting_interrupts
from efficientrag.fingerprint import folder_digest
from efficientrag.treehop.fixed_update import FixedUpdate

KS = [2, 4, 5, 6, 7, 10, 15, 20, 30]
SETTINGS = {"TreeHop@5, 2 hops": (5, 2), "TreeHop@5, 3 hops": (5, 3), "TreeHop@10, 2 hops": (10, 2)}
SETTINGS["TreeHop@10, 3 hops"] = (10, 3)
PRESET = REPO / "configs" / "treehop" / "minilm-cpu.yaml"
# Training variants (overrides of the preset), each trained and scored on the validation questions
# (TreeHop@5, 2 hops, best epoch); the best one is reported. The preset holds the winner of the
# pooled run; the paper's learning rate and a dropout-regularized one are the alternatives tried.
VARIANTS = {
    "gate1024-lr1e-3": [
        "model.gate_dim=1024",
        "model.num_blocks=3",
        "learning_rate=1e-3",
        "model.dropout=0.0",
    ],
    "gate1024-lr6e-5": [
        "model.gate_dim=1024",
        "model.num_blocks=3",
        "learning_rate=6e-5",
        "model.dropout=0.0",
    ],
    "gate1024-dropout0.3": [
        "model.gate_dim=1024",
        "model.num_blocks=3",
        "learning_rate=1e-3",
        "model.dropout=0.3",
    ],
    "gate512-lr3e-4": ["model.gate_dim=512", "model.num_blocks=2", "learning_rate=3e-4", "model.dropout=0.0"],
}
# The same tree search with a parameter-free next query: what the learned update must beat.
FIXED_RULES = {"tree search, next query = chunk vector (no training)": "chunk"}
FIXED_RULES["tree search, next query = q + c (no training)"] = "sum"
SPLIT_SEED = 1  # the synthesis's: quick_config's split_seed + 1


@dataclass(frozen=True)
class TreeHopOptions(ProtocolOptions):
    """The protocol's options with TreeHop's training: its preset, the variants tried on top of it,
    further overrides and the shares of the training questions of the data curve. The search is
    dense: TreeHop updates query vectors."""

    retriever: str = "dense"
    preset: str = str(PRESET)
    variants: list[str] = field(default_factory=lambda: list(VARIANTS))
    train_overrides: list[str] = field(default_factory=list)
    data_curve: list[float] = field(default_factory=list)


def train(opts: TreeHopOptions, work: Path, train_on: list[str]) -> tuple[Path, dict[str, Pool], dict]:
    """Every training variant on the training side; the best validation search score wins."""
    from efficientrag.training.pool import Pool as TrainPool
    from efficientrag.treehop.training import train_treehop

    pools = {d: open_pool(f"train-{d}", [(d, TRAIN_FILES[d])], work / "pools", opts) for d in train_on}
    train_pools = [TrainPool(d, p.corpus, p.examples, p.retriever) for d, p in pools.items()]
    root = work / "treehop" / "+".join(train_on)
    runs = {}
    for name in opts.variants:
        cfg = train_config(opts, root, root / "variants" / name, name)
        runs[name] = train_treehop(cfg, resume=True, pools=train_pools)
    best = max(runs, key=lambda n: runs[n]["best_score"])
    metrics = {**runs[best], "variant": best, "variants": {n: _variant_row(m) for n, m in runs.items()}}
    curve = {}
    n_train = runs[best]["training_data"]["train_questions"]
    for fraction in opts.data_curve:
        # The chosen variant on part of the training questions: does more data help?
        n = max(1, round(fraction * n_train))
        cfg = train_config(opts, root, root / "data_curve" / f"{best}-n{n}", best, f"max_train_questions={n}")
        curve[n] = _variant_row(train_treehop(cfg, resume=True, pools=train_pools))
    curve[n_train] = _variant_row(runs[best])
    metrics["data_curve"] = curve
    return root / "variants" / best / "model" / "best", pools, metrics


def train_config(opts: TreeHopOptions, root: Path, out: Path, variant: str, *extra: str) -> Any:
    """The TreeHop training config of one variant: the preset, the protocol's split, the variant's
    overrides and ``extra`` (for example a cap on the training questions), saved under ``out``."""
    from efficientrag.config import load_config
    from efficientrag.treehop.config import TreeHopTrainConfig

    overrides = [
        f"work_dir={root}",
        f"output_dir={out / 'model'}",
        f"validation_ratio={opts.validation_ratio}",
        f"split_seed={SPLIT_SEED}",
        f"progress={not opts.quiet}",
        *extra,
        *VARIANTS[variant],
        *opts.train_overrides,
    ]
    return load_config(TreeHopTrainConfig, opts.preset, overrides)


def _variant_row(metrics: dict) -> dict:
    return {k: metrics.get(k) for k in ("best_score", "best_epoch", "epochs", "parameters", "best")}


def evaluate_treehop(pool: Pool, model: Any, examples: list, label: str, out: Path, **settings: Any) -> dict:
    from efficientrag.baselines.treehop import TreeHopRetrieval
    from efficientrag.eval.runner import run_method
    from efficientrag.experiment.run_binding import index_and_data
    from efficientrag.treehop.config import TreeHopRetrievalConfig
    from efficientrag.treehop.retriever import TreeHopRetriever

    search = TreeHopRetriever(pool.retriever, model, TreeHopRetrievalConfig(**settings))
    # The folder names the model (its fingerprint) and the setting; the record binds them all.
    bound = {"method": "treehop", "settings": settings, **index_and_data(pool.retriever, examples)}
    return run_method(
        TreeHopRetrieval.over(search),
        examples,
        out / label,
        ks=(),
        batch_size=32,
        progress=False,
        meta=settings,
        fingerprint=bound,
    )


def evaluate_direct(pool: Pool, examples: list, out: Path) -> dict:
    from efficientrag.baselines.base import SharedSettings
    from efficientrag.baselines.direct_r import DirectRetrieval
    from efficientrag.eval.runner import run_method
    from efficientrag.experiment.run_binding import index_and_data

    method = DirectRetrieval(pool.retriever, None, shared=SharedSettings(ks=tuple(KS)))
    bound = {"method": "direct_r", "depth": method.depth, **index_and_data(pool.retriever, examples)}
    return run_method(method, examples, out, ks=KS, progress=False, fingerprint=bound)


def gain(ours: dict, direct: dict) -> dict[str, float]:
    """Recall and all-gold minus Direct-R's curve at the same chunk count (nan outside it)."""
    from efficientrag.eval.chunk_curve import curve_from_ranked, value_at

    e = ours["retrieval"]["all"]
    out = {}
    for metric in ("recall", "all_gold", "answer_recall"):
        try:
            out[metric] = e[metric] - value_at(
                curve_from_ranked(direct["retrieval"], metric), e["num_chunks"]
            )
        except ValueError:
            out[metric] = float("nan")
    return out


def choose(opts: TreeHopOptions, work: Path, model: Any, tag: str, pools: dict[str, Pool]) -> tuple:
    """Every setting on the validation questions of every training file; the best gain wins."""
    out = work / "treehop" / "+".join(pools) / "validation" / tag
    table: dict[str, dict[str, Any]] = {}
    direct = {}
    for name, pool in pools.items():
        val = validation_examples(pool, quick_config(work, name, opts))
        direct[name] = evaluate_direct(pool, val, out / name / "direct_r")
        for label, (k, hops) in SETTINGS.items():
            res = evaluate_treehop(pool, model, val, slug(label), out / name, top_k=k, hops=hops)
            table.setdefault(label, {})[name] = {"summary": res, "gain": gain(res, direct[name])}
    scores = {
        label: sum((g["gain"]["recall"] + g["gain"]["all_gold"]) / 2 for g in per.values()) / len(per)
        for label, per in table.items()
    }
    best = max(scores, key=lambda lab: scores[lab])
    # After the choice, so they cannot change it: the chosen K and hops with a fixed next query.
    k, hops = SETTINGS[best]
    for label, rule in FIXED_RULES.items():
        fixed = FixedUpdate.like(rule, model)
        for name, pool in pools.items():
            val = validation_examples(pool, quick_config(work, name, opts))
            res = evaluate_treehop(pool, fixed, val, slug(label), out / name, top_k=k, hops=hops)
            table.setdefault(f"{best}: {label} (diagnostic)", {})[name] = {
                "summary": res,
                "gain": gain(res, direct[name]),
            }
        per = table[f"{best}: {label} (diagnostic)"]
        scores[f"{best}: {label} (diagnostic)"] = sum(
            (g["gain"]["recall"] + g["gain"]["all_gold"]) / 2 for g in per.values()
        ) / len(per)
    return best, {"table": table, "scores": scores, "direct": direct}


def choose_combination(
    opts: TreeHopOptions, work: Path, train_on: list[str], model: Any, tag: str, pools: dict[str, Pool]
) -> tuple[tuple | None, dict | None, Any, Path | None]:
    """TreeHop + EfficientRAG's Tagger, its setting chosen on the validation questions of every
    training file, over the Labeler ``retrieval_efficientrag.py`` (or ``retrieval_rerank.py``) trained
    with this retriever.

    Returns:
        (setting, validation table, the Labeler, the combination's folder), all None where that
        Labeler is not trained yet.
    """
    models = work / "models" / "+".join(train_on)
    labeler = combination.load_labeler(models)
    if labeler is None:
        return None, None, None, None
    # The folder names both models, so a retrained TreeHop or Labeler never reuses these runs.
    labeler_tag = folder_digest(models / "labeler" / "best", 12)
    combo_dir = work / "treehop" / "+".join(train_on) / "combination" / f"{tag}-{labeler_tag}"
    val = {n: (p, validation_examples(p, quick_config(work, n, opts))) for n, p in pools.items()}
    setting, combo = combination.choose(val, model, labeler, combo_dir / "validation")
    return setting, combo, labeler, combo_dir


def report_on(
    work: Path,
    model: Any,
    tag: str,
    chosen: str,
    pool: Pool,
    name: str,
    pool_key: str,
    examples: list,
    efficientrag_results: dict[str, Any],
) -> dict[str, Any]:
    from efficientrag.jsonl import read_jsonl
    from efficientrag.treehop.gold_fate import count_fates

    out = work / "treehop" / "dev" / pool_key / name
    direct = evaluate_direct(pool, examples, out / "direct_r")
    rows: dict[str, Any] = {}
    fates: dict[str, Any] = {}
    for label, (k, hops) in SETTINGS.items():
        folder = out / tag
        rows[label] = evaluate_treehop(pool, model, examples, slug(label), folder, top_k=k, hops=hops)
        fates[label] = count_fates(read_jsonl(folder / slug(label) / "predictions.jsonl"))
    k, hops = SETTINGS[chosen]
    diag = f"{chosen}, official pruning (diagnostic)"
    rows[diag] = evaluate_treehop(
        pool, model, examples, slug(diag), out / tag, top_k=k, hops=hops, pruning="official"
    )
    fates[diag] = count_fates(read_jsonl(out / tag / slug(diag) / "predictions.jsonl"))
    for label, rule in FIXED_RULES.items():
        diag = f"{chosen}: {label} (diagnostic)"
        fixed = FixedUpdate.like(rule, model)
        folder = out / "fixed" / f"k{k}-h{hops}"
        rows[diag] = evaluate_treehop(pool, fixed, examples, slug(label), folder, top_k=k, hops=hops)
        fates[diag] = count_fates(read_jsonl(folder / slug(label) / "predictions.jsonl"))
    return {"direct": direct, "treehop": rows, "fates": fates, "efficientrag": efficientrag_results}


def efficientrag_result(
    work: Path, train_on: list[str], eval_on: list[str], name: str, pool_key: str
) -> dict:
    """EfficientRAG's row as ``retrieval_efficientrag.py`` measured it with this retriever, or {}."""
    path = work / "models" / "+".join(train_on) / f"results-{'+'.join(eval_on)}.json"
    if not path.is_file():
        return {}
    results = json.loads(path.read_text(encoding="utf-8"))
    per = results["results"].get(name, {})
    for key, res in per.items():
        if key.split(" (")[0] == pool_key and "diagnostic" not in key:
            return {"setting": results["setting"][0], **res}
    return {}


def run_protocol(
    args: argparse.Namespace, opts: TreeHopOptions, train_on: list[str], eval_on: list[str]
) -> str:
    from efficientrag.treehop.model import TreeHop

    t0 = time.perf_counter()
    work = Path(args.work_dir) / "dense"
    bm25_work = Path(args.work_dir) / "bm25"
    model_dir, pools, train_metrics = train(opts, work, train_on)
    tag = folder_digest(model_dir, 12)
    model = TreeHop.from_pretrained(model_dir, device="cpu")
    chosen, validation = choose(opts, work, model, tag, pools)
    combo_setting, combo, labeler, combo_dir = None, None, None, None
    if not args.no_combination:
        combo_setting, combo, labeler, combo_dir = choose_combination(opts, work, train_on, model, tag, pools)
    results: dict[str, dict[str, Any]] = {}
    bm25_opts = replace(opts, retriever="bm25")
    pool_keys = [("own pool", lambda d: [(d, DEV_FILES[d])], lambda d: f"dev-{d}")]
    if not opts.no_combined:
        combined = [(d, DEV_FILES[d]) for d in DATASETS]
        pool_keys.append(("combined pool", lambda d: combined, lambda d: "dev-combined"))
    for pool_key, files, pool_name in pool_keys:
        for name in eval_on:
            pool = open_pool(pool_name(name), files(name), work / "pools", opts)
            examples = [ex for ex in pool.examples if getattr(ex, "dataset", "") == name]
            eff = efficientrag_result(work, train_on, eval_on, name, pool_key)
            res = report_on(work, model, tag, chosen, pool, name, pool_key, examples, eff)
            if combo_setting is not None:
                res["combination"] = {
                    "label": combination.label_of(*combo_setting),
                    "summary": combination.evaluate(
                        pool, model, labeler, examples, combo_dir / "dev" / pool_key / name, combo_setting
                    ),
                }
            bm25_pool = open_pool(pool_name(name), files(name), bm25_work / "pools", bm25_opts)
            bm25_examples = [ex for ex in bm25_pool.examples if getattr(ex, "dataset", "") == name]
            res["bm25"] = {
                "direct": evaluate_direct(
                    bm25_pool, bm25_examples, work / "treehop" / "dev" / pool_key / name / "direct_r_bm25"
                ),
                "efficientrag": efficientrag_result(bm25_work, train_on, eval_on, name, pool_key),
            }
            results.setdefault(name, {})[f"{pool_key} ({len(pool.corpus)})"] = res
    # One report per training set (where treehop_latency.py reads the choice), whichever variant won.
    report_dir = work / "treehop" / "+".join(train_on)
    cmd = command_line(__file__)
    report = render(
        command=cmd.strip(),
        minutes=(time.perf_counter() - t0) / 60,
        train_on=train_on,
        train_metrics=train_metrics,
        model_dir=model_dir,
        chosen=chosen,
        validation=validation,
        combination=(combo_setting, combo),
        results=results,
        settings=SETTINGS,
        plot_dir=report_dir,
    )
    stem = report_dir / f"results-{'+'.join(eval_on)}"
    stem.with_name(stem.name + ".md").write_text(report, encoding="utf-8")
    stem.with_name(stem.name + ".json").write_text(
        json.dumps(
            {
                "chosen": chosen,
                "model": str(model_dir),
                "fingerprint": tag,
                # (K, hops, tag threshold, floor) of TreeHop + Tagger, chosen on validation: what
                # treehop_latency.py times beside the rest.
                "combination": {"setting": list(combo_setting) if combo_setting else None},
                "validation": validation,
                "results": results,
            },
            indent=1,
            default=str,
        ),
        encoding="utf-8",
    )
    return report


def main(argv: list[str] | None = None) -> int:
    parser = protocol_parser(__doc__, "for each dataset: train and choose on the others, report on it")
    parser.add_argument("--preset", default=str(PRESET), help="TreeHop training preset")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--train-overrides", nargs="*", default=[], metavar="key=value")
    parser.add_argument(
        "--data-curve",
        nargs="*",
        type=float,
        default=[0.25, 0.5],
        metavar="FRACTION",
        help="also train the chosen variant on these shares of the training questions (validation only)",
    )
    parser.add_argument(
        "--no-combination",
        action="store_true",
        help="skip TreeHop + EfficientRAG's Tagger (needs its Labeler)",
    )
    args = parse_protocol_args(parser, argv)
    opts = TreeHopOptions.from_args(args)
    if args.leave_one_out:
        reports = []
        for held in DATASETS:
            others = [d for d in DATASETS if d != held]
            reports.append(run_protocol(args, replace(opts, data_curve=[]), others, [held]))
        print("\n\n".join(reports))
        return 0
    train_on, eval_on = dataset_names(parser, args.train_on), dataset_names(parser, args.eval_on)
    print(run_protocol(args, opts, train_on, eval_on))
    return 0


def slug(label: str) -> str:
    """A setting's label as a folder name (its runs' folder)."""
    return "".join(c if c.isalnum() else "-" for c in label.lower()).strip("-").replace("--", "-")


if __name__ == "__main__":
    sys.exit(main_reporting_interrupts(main))

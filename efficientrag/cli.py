"""``efficientrag <command>``: parse a config, call the library, print what a person needs to see.

Every command takes ``--config PRESET.yaml`` and trailing ``key=value`` overrides; the named flags
(``--dataset``, ``--data``, ``--work-dir`` ...) are shorthands for overrides. The scripts under
``synth/``, ``train/`` and ``eval/`` run the same entries (``_delegate``, ``command_main``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from efficientrag.config import ConfigError, load_config, parse_args_with_overrides

log = logging.getLogger("efficientrag")

# Shorthand flag -> config key, per config family.
_EXPERIMENT_FLAGS = {
    "dataset": "data.dataset",
    "data": "data.path",
    "corpus": "data.corpus_path",
    "work_dir": "work_dir",
    "method": "eval.method",
    "limit": "eval.limit",
    "labeler": "efficientrag.labeler",
    "filter": "efficientrag.filter",
}


# Commands whose own entry (shared with a script under synth/ or train/) parses the arguments.
_DELEGATED = ("synth", "train")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    delegated = _delegate(argv)
    if delegated is not None:
        return delegated
    return _run(_build_parser(), argv)


def command_main(command: str, argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    """``efficientrag COMMAND ...`` as a program of its own, with the same options and behaviour:
    the entry of the thin scripts under ``eval/`` (``eval/run.py`` is ``command_main("eval")``)."""
    if command not in _STANDALONE:
        raise ValueError(f"no standalone entry for command {command!r}; known: {sorted(_STANDALONE)}")
    help_text, add_args = _STANDALONE[command]
    parser = argparse.ArgumentParser(prog=prog or f"efficientrag {command}", description=help_text)
    _add_verbose(parser)
    add_args(parser)
    return _run(parser, list(sys.argv[1:] if argv is None else argv))


def _run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    args = parse_args_with_overrides(parser, argv)
    _setup_logging(args.verbose)
    try:
        return int(args.handler(args) or 0)
    except (ConfigError, FileNotFoundError, ValueError) as exc:
        # Bad input is reported as one clear line, not a traceback.
        print(f"error: {exc}", file=sys.stderr)
        return 2


# --------------------------------------------------------------------------- commands


def cmd_corpus(args: argparse.Namespace) -> int:
    from efficientrag.experiment import prepare_data

    cfg = _experiment_config(args)
    pooled = prepare_data(cfg, rebuild=args.rebuild)
    print(json.dumps(pooled.stats, indent=2))
    print(f"wrote {len(pooled.corpus)} chunks and {len(pooled.examples)} examples to {cfg.data_dir}")
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    from efficientrag.experiment import prepare_data
    from efficientrag.retrieval.factory import build_retriever

    cfg = _experiment_config(args)
    pooled = prepare_data(cfg)
    build_retriever(cfg.retriever, pooled.corpus, cfg.index_dir, rebuild=args.rebuild)
    print(f"index ready at {cfg.index_dir} ({len(pooled.corpus)} chunks)")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from efficientrag.baselines.registry import build_method
    from efficientrag.config import save_config
    from efficientrag.eval.runner import run_method
    from efficientrag.experiment import prepare_data, select_examples
    from efficientrag.retrieval.factory import build_retriever

    cfg = _experiment_config(args)
    pooled = prepare_data(cfg)
    examples = select_examples(cfg, pooled.examples)
    retriever = build_retriever(cfg.retriever, pooled.corpus, cfg.index_dir)
    method = build_method(cfg.eval.method, cfg, retriever, _lazy_generator(cfg))
    out_dir = cfg.eval_dir(method.name)
    save_config(cfg, out_dir / "config.yaml")
    summary = run_method(
        method,
        examples,
        out_dir,
        ks=cfg.eval.ks,
        batch_size=cfg.eval.batch_size,
        resume=cfg.eval.resume and not args.no_resume,
        meta={"dataset": cfg.data.dataset, "retriever": cfg.retriever.kind, "encoder": cfg.retriever.encoder},
    )
    print((out_dir / "table.md").read_text(encoding="utf-8"))
    print(f"{summary['n']} questions; per-question records in {out_dir / 'predictions.jsonl'}")
    return 0


def cmd_retrieve(args: argparse.Namespace) -> int:
    from efficientrag.experiment import prepare_data
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.pipeline.trace_format import format_result
    from efficientrag.retrieval.factory import build_retriever

    cfg = _experiment_config(args)
    pooled = prepare_data(cfg)
    retriever = build_retriever(cfg.retriever, pooled.corpus, cfg.index_dir)
    rag = EfficientRAG.from_config(retriever, cfg.efficientrag)
    result = rag.retrieve(args.question)
    if args.json:
        print(
            json.dumps(
                {
                    "question": result.question,
                    "chunks": [c.to_dict() for c in result.chunks],
                    "trace": result.trace,
                },
                indent=2,
            )
        )
    else:
        print(format_result(result))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from efficientrag.eval.report import write_report

    path = write_report(args.runs, args.out, title=args.title, qa_source_note=args.qa_note)
    print(path.read_text(encoding="utf-8"))
    print(f"report written to {path} (with report.json and plots beside it)")
    return 0


def cmd_quickstart(args: argparse.Namespace) -> int:
    from efficientrag.quickstart import QuickstartConfig, run_quickstart

    flags = {
        "dataset": "data.dataset",
        "data": "data.path",
        "corpus": "data.corpus_path",
        "work_dir": "work_dir",
    }
    overrides = [
        f"{key}={getattr(args, f)}" for f, key in flags.items() if getattr(args, f, None) is not None
    ]
    if args.dataset and args.dataset != "toy" and not args.data:
        raise ValueError(f"--dataset {args.dataset} needs --data PATH (the dataset file)")
    cfg = load_config(QuickstartConfig, args.config, [*overrides, *args.overrides])
    summary = run_quickstart(cfg)
    print()
    print(summary["table"])
    lab, fil = summary["labeler"], summary["filter"]
    print(
        f"\nLabeler token F1 {lab.get('token_f1', 0):.3f}, tag accuracy {lab.get('tag_accuracy', 0):.3f}; "
        f"Filter token F1 {fil.get('token_f1', 0):.3f} (validation split of the synthesized data)"
    )
    print(f"report: {summary['report_path']}\nplot:   {summary['plot_path']}")
    return 0


def cmd_adapt(args: argparse.Namespace) -> int:
    from efficientrag.adapt.config import AdaptConfig
    from efficientrag.adapt.job import run_adapt

    flags = ("corpus", "labeler", "filter", "train_data", "questions", "work_dir")
    overrides = [f"{f}={getattr(args, f)}" for f in flags if getattr(args, f, None) is not None]
    summary = run_adapt(load_config(AdaptConfig, args.config, [*overrides, *args.overrides]))
    print(json.dumps({k: summary[k] for k in ("labeler", "filter", "timings_s")}, indent=2))
    print(f"adapted models: --labeler {summary['labeler']} --filter {summary['filter']}")
    return 0


# --------------------------------------------------------------------------- plumbing


def _delegate(argv: list[str]) -> int | None:
    """``efficientrag synth|train ...`` run the same entry as ``synth/run.py`` / ``train/*.py``."""
    if not argv or argv[0] not in _DELEGATED:
        return None
    if argv[0] == "synth":
        from efficientrag.synth.script import main as synth_main

        return synth_main(argv[1:], prog="efficientrag synth")
    from efficientrag.training.config import MODEL_KINDS
    from efficientrag.training.script import main as train_main

    if len(argv) < 2 or argv[1] not in MODEL_KINDS:
        print("usage: efficientrag train {labeler,filter} --config PRESET.yaml [--resume] [key=value ...]")
        return 2
    try:
        return train_main(argv[1], argv[2:])
    except (ConfigError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _lazy_generator(cfg):
    """The configured generator, built on first use (retrieval-only methods never load one)."""
    from functools import lru_cache

    from efficientrag.llm.factory import make_generator

    return lru_cache(maxsize=1)(lambda: make_generator(cfg.generator))


def _experiment_config(args: argparse.Namespace):
    from efficientrag.experiment import ExperimentConfig

    overrides = [
        f"{key}={getattr(args, flag)}"
        for flag, key in _EXPERIMENT_FLAGS.items()
        if getattr(args, flag, None) is not None
    ]
    return load_config(ExperimentConfig, args.config, [*overrides, *args.overrides])


def _add_experiment_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", "-c", help="experiment preset (YAML), e.g. configs/experiments/toy.yaml")
    p.add_argument("--dataset", help="hotpotqa | 2wikimultihopqa | musique | jsonl | toy (data.dataset)")
    p.add_argument("--data", help="dataset file (data.path)")
    p.add_argument("--corpus", help="corpus JSONL for --dataset jsonl (data.corpus_path)")
    p.add_argument("--work-dir", dest="work_dir", help="where data, index and results go (work_dir)")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")


def _add_verbose(p: argparse.ArgumentParser) -> None:
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")


_EVAL_HELP = "evaluate a method (direct_r, efficientrag, direct, cot, iter_retgen, flare, dragin, ...)"
_REPORT_HELP = "one Markdown report (tables + plots) over several eval run folders"


def _add_eval_args(p: argparse.ArgumentParser) -> None:
    _add_experiment_args(p)
    p.add_argument("--method", help="method name (eval.method)")
    p.add_argument("--limit", type=int, help="evaluate the first N questions (eval.limit)")
    p.add_argument("--labeler", help="trained Labeler folder (efficientrag.labeler)")
    p.add_argument("--filter", help="trained Filter folder (efficientrag.filter)")
    p.add_argument("--no-resume", action="store_true", help="start over instead of continuing")
    p.set_defaults(handler=cmd_eval)


def _add_report_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "runs", nargs="+", help="run folders written by `efficientrag eval` (work_dir/eval/<name>)"
    )
    p.add_argument("--out", required=True, help="folder for report.md, report.json and the plots")
    p.add_argument("--title", default="efficientrag comparison")
    p.add_argument(
        "--qa-note", help="mark every QA number with this note (e.g. answers from a scripted server)"
    )
    p.set_defaults(handler=cmd_report)


# Commands that also run as scripts of their own (command_main): help text and argument setup.
_STANDALONE = {"eval": (_EVAL_HELP, _add_eval_args), "report": (_REPORT_HELP, _add_report_args)}


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="efficientrag", description=__doc__.splitlines()[0])
    _add_verbose(parser)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("corpus", help="read a dataset and write the pooled, de-duplicated corpus")
    _add_experiment_args(p)
    p.add_argument("--rebuild", action="store_true", help="re-read the dataset even if already prepared")
    p.set_defaults(handler=cmd_corpus)

    p = sub.add_parser("index", help="build (or verify) the retrieval index over the corpus")
    _add_experiment_args(p)
    p.add_argument("--rebuild", action="store_true", help="rebuild even if a matching index exists")
    p.set_defaults(handler=cmd_index)

    _add_eval_args(sub.add_parser("eval", help=_EVAL_HELP))

    p = sub.add_parser("retrieve", help="run EfficientRAG on one question and print the hops")
    _add_experiment_args(p)
    p.add_argument("--question", "-q", required=True)
    p.add_argument("--labeler", help="trained Labeler folder (efficientrag.labeler)")
    p.add_argument("--filter", help="trained Filter folder (efficientrag.filter)")
    p.add_argument("--json", action="store_true", help="print the result and trace as JSON")
    p.set_defaults(handler=cmd_retrieve)

    # Listed for --help; the arguments are parsed by the commands' own entries (see _delegate).
    sub.add_parser("synth", help="synthesize Labeler/Filter training data (same as synth/run.py)")
    sub.add_parser(
        "train", help="train the labeler or the filter (same as train/labeler.py, train/filter.py)"
    )

    _add_report_args(sub.add_parser("report", help=_REPORT_HELP))

    p = sub.add_parser(
        "quickstart",
        help="toy world (or --dataset/--data) -> synthesis -> train Labeler+Filter -> EfficientRAG vs Direct-R",
    )
    p.add_argument("--config", "-c", help="quickstart preset (YAML), e.g. configs/quickstart/hotpotqa.yaml")
    p.add_argument("--dataset", help="toy (default) | hotpotqa | 2wikimultihopqa | musique | jsonl")
    p.add_argument("--data", help="dataset file (data.path)")
    p.add_argument("--corpus", help="corpus JSONL for --dataset jsonl (data.corpus_path)")
    p.add_argument("--work-dir", dest="work_dir", help="where everything goes (default runs/quickstart)")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
    p.set_defaults(handler=cmd_quickstart)

    p = sub.add_parser(
        "adapt", help="fine-tune trained Labeler/Filter for a new corpus, without gold (resumable)"
    )
    p.add_argument("--config", "-c", help="adapt preset (YAML), e.g. configs/adapt/minilm-cpu.yaml")
    p.add_argument("--corpus", help="target corpus JSONL (corpus)")
    p.add_argument("--labeler", help="trained Labeler folder (labeler)")
    p.add_argument("--filter", help="trained Filter folder (filter)")
    p.add_argument("--train-data", dest="train_data", help="their training set folder (train_data)")
    p.add_argument("--questions", help="unlabeled questions for self-training (questions)")
    p.add_argument("--work-dir", dest="work_dir", help="where everything goes (default runs/adapt)")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
    p.set_defaults(handler=cmd_adapt)
    return parser


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    # One INFO line per HTTP request is noise in a run of thousands of LLM calls.
    noisy_loggers = ("httpx", "httpx2", "openai", "urllib3", "filelock", "faiss.loader", "accelerate")
    for noisy in noisy_loggers:
        logging.getLogger(noisy).setLevel(logging.WARNING)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

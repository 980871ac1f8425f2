"""``efficientrag <command>``: parse a config, call the library, print what a person needs to see.

Every command takes ``--config PRESET.yaml`` and trailing ``key=value`` overrides; the named flags
(``--dataset``, ``--data``, ``--work-dir`` ...) are shorthands for overrides.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from efficientrag.config import ConfigError, load_config

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


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
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


# --------------------------------------------------------------------------- plumbing


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


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="efficientrag", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("corpus", help="read a dataset and write the pooled, de-duplicated corpus")
    _add_experiment_args(p)
    p.add_argument("--rebuild", action="store_true", help="re-read the dataset even if already prepared")
    p.set_defaults(handler=cmd_corpus)

    p = sub.add_parser("index", help="build (or verify) the retrieval index over the corpus")
    _add_experiment_args(p)
    p.add_argument("--rebuild", action="store_true", help="rebuild even if a matching index exists")
    p.set_defaults(handler=cmd_index)

    p = sub.add_parser(
        "eval",
        help="evaluate a method (direct_r, efficientrag, direct, cot, iter_retgen, flare, dragin, ...)",
    )
    _add_experiment_args(p)
    p.add_argument("--method", help="method name (eval.method)")
    p.add_argument("--limit", type=int, help="evaluate the first N questions (eval.limit)")
    p.add_argument("--labeler", help="trained Labeler folder (efficientrag.labeler)")
    p.add_argument("--filter", help="trained Filter folder (efficientrag.filter)")
    p.add_argument("--no-resume", action="store_true", help="start over instead of continuing")
    p.set_defaults(handler=cmd_eval)

    p = sub.add_parser("retrieve", help="run EfficientRAG on one question and print the hops")
    _add_experiment_args(p)
    p.add_argument("--question", "-q", required=True)
    p.add_argument("--labeler", help="trained Labeler folder (efficientrag.labeler)")
    p.add_argument("--filter", help="trained Filter folder (efficientrag.filter)")
    p.add_argument("--json", action="store_true", help="print the result and trace as JSON")
    p.set_defaults(handler=cmd_retrieve)
    return parser


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    # One INFO line per HTTP request is noise in a run of thousands of LLM calls.
    for noisy in ("httpx", "httpx2", "openai", "urllib3", "filelock", "faiss.loader"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

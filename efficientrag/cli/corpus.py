"""``efficientrag corpus`` and ``efficientrag index``: the data and the index every later command reads."""

from __future__ import annotations

import argparse
import json

from efficientrag.cli.command_config import experiment_config


def cmd_corpus(args: argparse.Namespace) -> int:
    """``efficientrag corpus``: read the dataset and write the pooled, de-duplicated corpus (and
    examples) to the experiment's data folder, so every later command reads one corpus.

    Args:
        args: the parsed command line (``--config``, the data flags, ``--rebuild``, overrides).

    Returns:
        0; bad input raises, which :func:`main` reports as one line and exit status 2.
    """
    from efficientrag.experiment.prepared_data import prepare_data

    cfg = experiment_config(args)
    pooled = prepare_data(cfg, rebuild=args.rebuild)
    print(json.dumps(pooled.stats, indent=2))
    print(f"wrote {len(pooled.corpus)} chunks and {len(pooled.examples)} examples to {cfg.data_dir}")
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    """``efficientrag index``: build the retrieval index over the prepared corpus, or verify that
    the saved one matches the config (a mismatch fails rather than overwrite hours of encoding).

    Args:
        args: the parsed command line (``--config``, the data flags, ``--rebuild``, overrides).

    Returns:
        0; a mismatching index or bad input raises (exit status 2 through :func:`main`).
    """
    from efficientrag.experiment.prepared_data import prepare_data
    from efficientrag.retrieval.factory import build_retriever

    cfg = experiment_config(args)
    pooled = prepare_data(cfg)
    retriever = build_retriever(cfg.retriever, pooled.corpus, cfg.index_dir, rebuild=args.rebuild)
    where = getattr(retriever, "location", cfg.index_dir)
    print(f"index ready at {where} ({len(pooled.corpus)} chunks)")
    return 0

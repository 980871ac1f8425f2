"""``efficientrag retrieve``: the EfficientRAG loop on one question, to see what the trained models do."""

from __future__ import annotations

import argparse
import json

from efficientrag.cli.command_config import experiment_config


def cmd_retrieve(args: argparse.Namespace) -> int:
    """``efficientrag retrieve``: run the EfficientRAG loop on one question and print its hops (or,
    with ``--json``, the chunks and trace), to see what the trained models do.

    Args:
        args: the parsed command line (``--config``, the data and model flags, ``--question``,
            ``--json``, overrides).

    Returns:
        0; an empty question, missing model folders or bad input raise (exit status 2).
    """
    from efficientrag.experiment.assembly import check_model_folders, search_backend, search_corpus
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.pipeline.inputs import check_questions
    from efficientrag.pipeline.trace import trace_to_dicts
    from efficientrag.pipeline.trace_format import format_result

    cfg = experiment_config(args)
    check_questions([args.question], source="--question")
    check_model_folders(cfg, "efficientrag")
    # A Milvus collection needs no dataset to be asked a question, but a --corpus must be its own.
    retriever = search_backend(cfg, search_corpus(cfg))
    rag = EfficientRAG.from_config(retriever, cfg.efficientrag)
    result = rag.retrieve(args.question)
    if args.json:
        print(
            json.dumps(
                {
                    "question": result.question,
                    "chunks": [c.to_dict() for c in result.chunks],
                    "trace": trace_to_dicts(result.trace),
                },
                indent=2,
            )
        )
    else:
        print(format_result(result))
    return 0

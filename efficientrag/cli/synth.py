"""Command-line entry shared by ``synth/run.py`` and ``efficientrag synth``.

Parses the config (YAML preset + ``key=value`` overrides) and calls
``efficientrag.synth.pipeline.run_synthesis``. Examples::

    python synth/run.py --config configs/synth/musique.yaml data.path=/data/musique_ans_v1.0_train.jsonl
    python synth/run.py --config configs/synth/toy.yaml --stages negatives,build --limit 50
    python synth/run.py --config configs/synth/hotpotqa.yaml retriever.kind=bm25 force=true
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from efficientrag.config import load_config, parse_args_with_overrides
from efficientrag.errors import ConfigError
from efficientrag.synth.config import SynthConfig
from efficientrag.synth.pipeline import run_synthesis
from efficientrag.synth.stage import StageError


def build_parser(prog: str = "synth/run.py") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", "-c", help="YAML preset, e.g. configs/synth/toy.yaml")
    parser.add_argument(
        "--stages", help="comma-separated subset of decompose,label,align,next_hop,negatives,build"
    )
    parser.add_argument("--limit", type=int, help="only the first N questions")
    parser.add_argument("--force", action="store_true", help="redo the selected stages (clears later ones)")
    parser.add_argument(
        "overrides", nargs="*", help="key=value config overrides (data.path=..., out_dir=...)"
    )
    return parser


def main(argv: list[str] | None = None, prog: str = "synth/run.py") -> int:
    args = parse_args_with_overrides(build_parser(prog), argv)
    overrides = list(args.overrides)
    if args.stages:
        overrides.append(f"stages=[{args.stages}]")
    if args.limit is not None:
        overrides.append(f"limit={args.limit}")
    if args.force:
        overrides.append("force=true")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("efficientrag").setLevel(logging.INFO)
    try:
        cfg = load_config(SynthConfig, args.config, overrides)
        stats = run_synthesis(cfg)
    except (ConfigError, StageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    summary = {
        name: {"labeler": s["labeler"]["rows"], "filter": s["filter"]["rows"], "rejects": s["rejects"]}
        for name, s in stats.get("datasets", {}).items()
    }
    print(json.dumps({"out_dir": stats["out_dir"], "datasets": summary}, indent=2))
    return 0

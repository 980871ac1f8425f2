"""The EfficientRAG paper's baselines on the HotpotQA dev sample, end to end, with answers from a
scripted fake OpenAI-compatible server, and the comparison report over all runs.

What is real: the data (the shared 350-question HotpotQA sample, pooled into one corpus), the
retriever (BM25 via bm25s, or MiniLM + FAISS with ``--retriever dense``), every method's control
flow, prompts, HTTP calls, counters, records, metrics and the report. What is not: the "model".
It is an *oracle reader*: asked to answer from documents, it answers the gold answer when that
string occurs in the documents and "unknown" otherwise; with no documents (Direct, CoT) it
answers "unknown"; it decomposes a question into the question plus one question per capitalized
name in it; in Self-Ask it asks about the first name, then the question itself, then answers
with the last intermediate answer. So its QA numbers track answer recall of each method's
retrieval, and say nothing about any language model; the report marks them.

EfficientRAG (retrieval + one answer call) joins the report when trained Labeler/Filter folders
are given; evaluate it on questions it was not trained on (``--ids``: one question id per line).

    python benchmarks/qa_report_fake.py                 # all 350 questions, BM25
    python benchmarks/qa_report_fake.py --limit 50 --retriever dense
    python benchmarks/qa_report_fake.py --retriever dense \
        --ids runs/bench_efficientrag/hotpotqa/held_out_ids.txt \
        --labeler runs/bench_efficientrag/hotpotqa/models/labeler/best \
        --filter runs/bench_efficientrag/hotpotqa/models/filter/best
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "hotpotqa" / "dev_ircot.350.jsonl"
METHODS = ("direct", "cot", "direct_r", "decompose_r", "iter_retgen", "self_ask")
QA_SOURCE = (
    "scripted fake OpenAI server acting as an oracle reader (answers the gold answer iff it occurs in "
    "the documents it was shown, else 'unknown')"
)
_TARGET = re.compile(r"Question: ([^\n]*)\nAnswer:\s*$")
_SELF_ASK = re.compile(r"Question: ([^\n]*)\nAre follow up questions needed here:")
_NAME = re.compile(r"\b[A-Z][\w'.-]*(?:\s+(?:of|the|de|and|[A-Z][\w'.-]*))*\s*[A-Z]?[\w'.-]*")


class OracleReader:
    """The scripted server's replies (see the module docstring)."""

    def __init__(self, examples) -> None:
        from efficientrag.text.normalize import normalize_answer

        self.norm = normalize_answer
        self.answers = {ex.question: ex.answers for ex in examples}

    def names(self, question: str) -> list[str]:
        words = _NAME.findall(question)
        return [
            w.strip()
            for w in words
            if len(w.strip()) > 3
            and w.strip().split()[0]
            not in {
                "What",
                "Which",
                "Who",
                "When",
                "Where",
                "How",
                "Is",
                "Are",
                "Was",
                "Were",
                "Did",
                "Do",
                "In",
                "The",
            }
        ]

    def read(self, question: str, documents: str) -> str:
        docs = self.norm(documents)
        for answer in self.answers.get(question, []):
            if self.norm(answer) and self.norm(answer) in docs:
                return answer
        return "unknown"

    def __call__(self, request: dict) -> str:
        import json

        from efficientrag.baselines.prompts import instructions as ins
        from efficientrag.testing.fake_completions import request_text

        text = request_text(request)
        if "messages" not in request:
            return self.self_ask(text)
        question = _TARGET.search(text).group(1)
        if text.startswith((ins.DIRECT, ins.COT)):
            return json.dumps({"thought": "No documents were given.", "answer": "unknown"})
        if text.startswith(ins.DECOMPOSE):
            subs = [question] + [f"What is {name}?" for name in self.names(question)[:3]]
            return json.dumps({"decomposed_questions": subs})
        documents = text[text.rfind("Documents:\n") : text.rfind("\nQuestion:")]
        answer = self.read(question, documents)
        if text.startswith(ins.ITER_RETGEN):
            first = documents.split("\n")[1] if "\n" in documents else ""
            thought = first.split("] ", 1)[-1].split(". ")[0]
            return json.dumps({"thought": thought, "answer": answer})
        return json.dumps({"answer": answer})

    def self_ask(self, text: str) -> str:
        from efficientrag.baselines.prompts import instructions as ins

        if text.rstrip().endswith(ins.FINAL):
            return " unknown"
        question = _SELF_ASK.findall(text)[-1]
        tail = text[text.rfind(f"Question: {question}") :]
        answers = re.findall(rf"{re.escape(ins.INTERMEDIATE)} ([^\n]*)", tail)
        names = self.names(question)
        if not answers:
            first = f"What is {names[0]}?" if names else question
            return f" Yes.\n{ins.FOLLOW_UP} {first}"
        if len(answers) == 1 and names:
            return f"{ins.FOLLOW_UP} {question}"
        return f"{ins.FINAL} {answers[-1]}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", default=str(DEFAULT_DATA), help="HotpotQA file (IRCoT JSONL or distractor JSON)"
    )
    parser.add_argument(
        "--limit", type=int, default=None, help="evaluate the first N questions (corpus: all)"
    )
    parser.add_argument("--retriever", choices=("bm25", "dense"), default="bm25")
    parser.add_argument("--out", default=str(REPO / "runs" / "qa_report_fake"))
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--ids", help="evaluate only these question ids (one per line)")
    parser.add_argument("--labeler", help="trained Labeler folder: adds EfficientRAG to the report")
    parser.add_argument("--filter", help="trained Filter folder (with --labeler)")
    parser.add_argument(
        "--efficientrag",
        nargs="*",
        default=["query_mode=branch", "tag_threshold=0.05", "token_threshold=0.9"],
        help="key=value settings of the EfficientRAG loop (efficientrag.*)",
    )
    parser.add_argument("--batch-size", type=int, default=32)
    return parser


def _experiment(args: argparse.Namespace) -> tuple[Any, list[str]]:
    """The experiment config the flags describe, and the methods to evaluate (EfficientRAG added
    when trained models are given)."""
    from efficientrag.config import load_config
    from efficientrag.data.config import DataConfig
    from efficientrag.experiment.config import EvalSettings, ExperimentConfig
    from efficientrag.pipeline.config import EfficientRAGConfig
    from efficientrag.retrieval.config import RetrieverConfig

    cfg = ExperimentConfig(
        work_dir=str(Path(args.out)),
        data=DataConfig(dataset="hotpotqa", path=str(Path(args.data).resolve())),
        retriever=RetrieverConfig(kind=args.retriever),
        eval=EvalSettings(
            ks=[2, 5, 10, 20], limit=args.limit, batch_size=args.batch_size, answer=True, ids_file=args.ids
        ),
    )
    methods = list(args.methods)
    if args.labeler:
        cfg.efficientrag = load_config(
            EfficientRAGConfig,
            None,
            [
                *args.efficientrag,
                f"labeler={Path(args.labeler).resolve()}",
                f"filter={Path(args.filter).resolve()}",
            ],
        )
        methods.append("efficientrag")
    return cfg, methods


def _evaluate_all(cfg: Any, methods: list[str], retriever: Any, pooled: Any, examples: list) -> list[Path]:
    """Each method over the same questions, every answer from the scripted oracle reader."""
    from efficientrag.eval.evaluation import evaluate_method
    from efficientrag.experiment.assembly import build_method
    from efficientrag.llm.config import LLMConfig
    from efficientrag.llm.generator_config import GeneratorConfig, OpenAIGeneratorConfig
    from efficientrag.llm.openai_generator import OpenAIGenerator
    from efficientrag.testing.fake_openai import FakeOpenAIServer

    run_dirs = []
    with FakeOpenAIServer(OracleReader(pooled.examples), model="oracle-reader") as srv:
        llm = LLMConfig(base_url=srv.base_url, model="oracle-reader", api_key="not-a-key", concurrency=32)
        cfg.generator = GeneratorConfig(backend="openai", openai=OpenAIGeneratorConfig(llm=llm))
        generator = OpenAIGenerator(cfg.generator.openai)
        for name in methods:
            method = build_method(name, cfg, retriever, lambda: generator)
            start = time.perf_counter()
            # work_dir/eval/<method>, started over: the scripted server's port changes every run.
            summary = evaluate_method(
                cfg,
                method,
                retriever,
                pooled,
                examples,
                resume=False,
                meta={"corpus_chunks": len(pooled.corpus), "qa_source": QA_SOURCE},
                progress=False,
            )
            qa = summary.get("qa", {})
            print(
                f"{method.name:>14}: {summary['n']} q, {summary['num_failed']} failed, "
                f"LLM calls/q {summary['counters_mean'].get('llm_calls', 0):.2f}, "
                f"contained {qa.get('contained', 0):.1f}, {time.perf_counter() - start:.1f}s"
            )
            run_dirs.append(summary.run_dir)
        generator.close()
    return run_dirs


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if bool(args.labeler) != bool(args.filter):
        parser.error("--labeler and --filter go together")

    from efficientrag.data.loader import load_data
    from efficientrag.eval.report import write_report
    from efficientrag.experiment.assembly import select_examples
    from efficientrag.retrieval.factory import build_retriever

    if not Path(args.data).is_file():
        print(f"data file not found: {args.data} (pass --data)", file=sys.stderr)
        return 2
    out = Path(args.out)
    cfg, methods = _experiment(args)
    t0 = time.perf_counter()
    pooled = load_data(cfg.data)
    examples = select_examples(cfg, pooled.examples)
    retriever = build_retriever(
        cfg.retriever, pooled.corpus, out / "index" / args.retriever, show_progress=False
    )
    print(
        f"{len(pooled.corpus)} chunks, {len(examples)} questions, {args.retriever} index in {time.perf_counter() - t0:.1f}s"
    )
    run_dirs = _evaluate_all(cfg, methods, retriever, pooled, examples)
    note = (
        f"Every answer below comes from the scripted server, not a model. Retrieval is real ({args.retriever}); "
        + (
            "EfficientRAG uses Labeler/Filter models trained on other questions than these."
            if args.labeler
            else "EfficientRAG is absent: pass --labeler/--filter (trained models) to include it."
        )
    )
    report = write_report(
        run_dirs,
        out / "report",
        title="EfficientRAG baselines on HotpotQA (harness check)",
        qa_source_note=note,
    )
    print(f"report: {report}")
    return 0


if __name__ == "__main__":
    from efficientrag.eval.interrupts import main_reporting_interrupts

    sys.exit(main_reporting_interrupts(main))

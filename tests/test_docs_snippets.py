"""The framework snippets of docs/langchain.md and docs/llamaindex.md run as printed: a vector store
over the offline MiniLM, searched by EfficientRAG with its models given as folders; the LlamaIndex
one embeds the text alone (no metadata warning). docs/baselines.md's ``evaluate`` snippet runs too."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from efficientrag.testing.scripted_models import bridge_corpus

DOCS = Path(__file__).resolve().parent.parent / "docs"
MARK = "<!-- run by tests/test_docs_snippets.py -->"
# Imports of modules that issue 51 moved, as the pages (being rewritten apart from that change)
# still print them -> the module that defines the names now. An entry does nothing once its page
# prints the new path; delete it then.
MOVED_IMPORTS = {
    "from efficientrag.experiment import ExperimentConfig": "from efficientrag.eval.experiment import ExperimentConfig",
}


def snippet(page: str) -> str:
    """The one code block of ``page`` that follows the run marker."""
    text = (DOCS / page).read_text(encoding="utf-8")
    assert text.count(MARK) == 1, f"docs/{page} has no (or several) '{MARK}' blocks"
    match = re.search(re.escape(MARK) + r"\n```python\n(.*?)```", text, re.S)
    assert match, f"docs/{page}: the marker is not followed by a python block"
    return match.group(1)


def run_snippet(page: str, tmp_path: Path, models: Path, capsys) -> list[str]:
    corpus = tmp_path / "chunks.jsonl"
    corpus.write_text("".join(json.dumps(c.to_dict()) + "\n" for c in bridge_corpus()), encoding="utf-8")
    code = snippet(page)
    for printed, real in {
        "chunks.jsonl": corpus,
        "runs/lab/best": models / "labeler",
        "runs/fil/best": models / "filter",
    }.items():
        assert f'"{printed}"' in code
        code = code.replace(f'"{printed}"', repr(str(real)))
    scope: dict = {}
    exec(compile(code, f"docs/{page}", "exec"), scope)
    result = scope["result"]
    assert f"rag.retrieve({result.question!r})".replace("'", '"') in code
    assert str(result.chunk_ids) in capsys.readouterr().out
    searched = [h.id for h in result.trace[0].hits[0]]  # the store answered the first hop
    assert searched and set(searched + result.chunk_ids) <= {c.id for c in bridge_corpus()}
    return searched


def test_the_langchain_snippet_runs(tmp_path, saved_minilm_models, capsys):
    pytest.importorskip("langchain_core", reason="needs the langchain extra")
    run_snippet("langchain.md", tmp_path, saved_minilm_models, capsys)


def test_the_llamaindex_snippet_runs_and_embeds_the_text_alone(tmp_path, saved_minilm_models, capsys, caplog):
    pytest.importorskip("llama_index.core", reason="needs the llamaindex extra")
    with caplog.at_level(logging.WARNING, logger="efficientrag.retrieval.framework"):
        run_snippet("llamaindex.md", tmp_path, saved_minilm_models, capsys)
    assert not [r for r in caplog.records if "excluded_embed_metadata_keys" in r.getMessage()]


def test_the_evaluate_snippet_runs(tmp_path, capsys):
    code = snippet("baselines.md")
    for old, new in MOVED_IMPORTS.items():
        code = code.replace(old, new)
    preset = DOCS.parent / "configs" / "experiments" / "toy.yaml"
    for printed, real in {
        "configs/experiments/toy.yaml": str(preset),
        "work_dir=runs/toy": f"work_dir={tmp_path}",
    }.items():
        assert f'"{printed}"' in code
        code = code.replace(f'"{printed}"', repr(real))
    scope: dict = {}
    exec(compile(code, "docs/baselines.md", "exec"), scope)
    summary = scope["summary"]
    out = capsys.readouterr().out
    assert (
        summary.table in out
        and f"{summary['retrieval']['10']['recall']} 20 {tmp_path / 'eval' / 'direct_r'}" in out
    )

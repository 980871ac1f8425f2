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
AFTER = "<!-- run by tests/test_docs_snippets.py, after the block above -->"


def snippet(page: str) -> str:
    """The one code block of ``page`` that follows the run marker."""
    text = (DOCS / page).read_text(encoding="utf-8")
    assert text.count(MARK) == 1, f"docs/{page} has no (or several) '{MARK}' blocks"
    match = re.search(re.escape(MARK) + r"\n```python\n(.*?)```", text, re.S)
    assert match, f"docs/{page}: the marker is not followed by a python block"
    return match.group(1)


def after_snippet(page: str) -> str:
    """The code block of ``page`` that continues the marked one (the framework's own reranker)."""
    text = (DOCS / page).read_text(encoding="utf-8")
    match = re.search(re.escape(AFTER) + r"\n```python\n(.*?)```", text, re.S)
    assert text.count(AFTER) == 1 and match, f"docs/{page} has no (or several) '{AFTER}' python blocks"
    return match.group(1)


def run_snippet(page: str, tmp_path: Path, models: Path, capsys, reranker: Path | None = None) -> dict:
    """Run the page's marked block (and, given a ``reranker`` folder, the block after it); returns
    the names the code bound."""
    corpus = tmp_path / "chunks.jsonl"
    corpus.write_text("".join(json.dumps(c.to_dict()) + "\n" for c in bridge_corpus()), encoding="utf-8")
    code = snippet(page) + (after_snippet(page) if reranker else "")
    paths = {"chunks.jsonl": corpus, "runs/lab/best": models / "labeler", "runs/fil/best": models / "filter"}
    if reranker:
        paths["runs/reranker/model/best"] = reranker
    for printed, real in paths.items():
        assert f'"{printed}"' in code
        code = code.replace(f'"{printed}"', repr(str(real)))
    scope: dict = {}
    exec(compile(code, f"docs/{page}", "exec"), scope)
    result = scope["result"]
    assert f"rag.retrieve({result.question!r})".replace("'", '"') in code
    scope["printed"] = capsys.readouterr().out
    assert str(result.chunk_ids) in scope["printed"]
    searched = [h.id for h in result.trace[0].hits[0]]  # the store answered the first hop
    assert searched and set(searched + result.chunk_ids) <= {c.id for c in bridge_corpus()}
    return scope


@pytest.fixture(scope="module")
def reranker(tmp_path_factory) -> Path:
    from efficientrag.testing.tiny_backbones import tiny_cross_encoder
    from efficientrag.testing.token_tasks import sentences

    texts = sentences(100) + [c.contents for c in bridge_corpus()]
    return tiny_cross_encoder(tmp_path_factory.mktemp("ce") / "reranker", texts)


def reranked_ids(printed: str) -> list[str]:
    """The ids the reranker block printed before "beside"."""
    line = next(x for x in printed.splitlines() if " beside " in x)
    return json.loads(line.split(" beside ")[0].replace("'", '"'))


def test_the_langchain_snippet_runs(tmp_path, saved_minilm_models, capsys):
    pytest.importorskip("langchain_core", reason="needs the langchain extra")
    run_snippet("langchain.md", tmp_path, saved_minilm_models, capsys)


def test_langchains_reranker_beside_it_runs_over_the_same_store(
    tmp_path, saved_minilm_models, capsys, reranker
):
    pytest.importorskip("langchain_classic", reason="needs the langchain extra")
    pytest.importorskip("langchain_community", reason="needs the langchain extra")
    scope = run_snippet("langchain.md", tmp_path, saved_minilm_models, capsys, reranker)
    ids = reranked_ids(scope["printed"])
    assert ids == [d.metadata["id"] for d in scope["docs"]] and len(ids) == min(6, len(bridge_corpus()))
    assert set(ids) <= {c.id for c in bridge_corpus()}


def test_the_llamaindex_snippet_runs_and_embeds_the_text_alone(tmp_path, saved_minilm_models, capsys, caplog):
    pytest.importorskip("llama_index.core", reason="needs the llamaindex extra")
    with caplog.at_level(logging.WARNING, logger="efficientrag.retrieval.framework"):
        run_snippet("llamaindex.md", tmp_path, saved_minilm_models, capsys)
    assert not [r for r in caplog.records if "excluded_embed_metadata_keys" in r.getMessage()]


def test_llamaindexs_reranker_beside_it_runs_over_the_same_index(
    tmp_path, saved_minilm_models, capsys, reranker
):
    pytest.importorskip("llama_index.core", reason="needs the llamaindex extra")
    scope = run_snippet("llamaindex.md", tmp_path, saved_minilm_models, capsys, reranker)
    ids = reranked_ids(scope["printed"])
    assert ids == [n.node.metadata["id"] for n in scope["nodes"]] and len(ids) == min(6, len(bridge_corpus()))


def test_the_evaluate_snippet_runs(tmp_path, capsys):
    code = snippet("baselines.md")
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

"""benchmarks/hop_gate.py: the first hop alone, read from a trace, is what ``max_hops=1`` keeps."""

import json

import pytest

from efficientrag.experiment.run_binding import loop_fingerprint
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.pipeline.trace import trace_to_dicts
from efficientrag.testing.scripted_models import (
    ALPHA_QUESTION,
    OMEGA_QUESTION,
    STOPWORDS,
    USEFUL_WORDS,
    InfoOnlyFilter,
    ScriptedPrediction,
    bridge_corpus,
)
from efficientrag.testing.word_overlap import WordOverlapRetriever

BENCHMARK = "hop_gate"  # the conftest fixture `bench` imports it

# A Continue probability per chunk, 0.95 when the query names the chunk's title: the first hop
# keeps several chunks, the budget has to choose among them, and a later hop can outbid them.
PROBS = {"Alpha": 0.9, "Bob": 0.3, "Paris": 0.6, "Omega": 0.8, "Carla": 0.2, "Noise": 0.7}


class FixedLabeler:
    def predict(self, pairs, **kw):
        out = []
        for query_words, chunk_words in pairs:
            title = chunk_words[0]
            useful = set(USEFUL_WORDS.get(title, []))
            prob = 0.95 if title in query_words else PROBS[title]
            out.append(ScriptedPrediction(prob, [float(w in useful) for w in chunk_words]))
        return out


def run(cfg: EfficientRAGConfig, question: str):
    retriever = WordOverlapRetriever(bridge_corpus(), STOPWORDS)
    return EfficientRAG(retriever, FixedLabeler(), InfoOnlyFilter(), cfg).retrieve(question)


def run_json(cfg: EfficientRAGConfig) -> dict:
    return {"fingerprint": {"settings": {"efficientrag": loop_fingerprint(cfg, answers=False)}}}


SETTINGS = [
    {"top_k": 4, "floor_k": 0, "chunk_budget": 2, "budget_policy": "best"},
    # The first hop alone keeps more than the budget: the floor, then the most probable.
    {"top_k": 5, "floor_k": 1, "chunk_budget": 3, "budget_policy": "best", "tag_threshold": 0.25},
    {"top_k": 3, "floor_k": 1, "chunk_budget": 3, "budget_policy": "best", "fill_budget": True},
    {"top_k": 4, "floor_k": 0, "chunk_budget": 3, "budget_policy": "first"},
    {"top_k": 4, "floor_k": 2, "chunk_budget": 3, "budget_policy": "first"},
    {"top_k": 4, "floor_k": 2, "chunk_budget": 4, "budget_policy": "best", "fill_budget": True},
    {"top_k": 3, "floor_k": 0, "tag_threshold": 0.65},
]


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("question", [ALPHA_QUESTION, OMEGA_QUESTION])
def test_first_hop_only_is_what_one_hop_keeps(bench, settings, question):
    cfg = EfficientRAGConfig(max_hops=4, **settings)
    full = run(cfg, question)
    record = {"trace": {"hops": trace_to_dicts(full.trace)}}
    loop = bench.loop_settings(run_json(cfg), "run.json")
    one_hop = run(EfficientRAGConfig(max_hops=1, **settings), question)
    assert bench.first_hop_only(record, loop, "test") == one_hop.chunk_ids


def test_the_hops_change_what_these_settings_keep():
    """Else the test above could not tell the first hop from the whole loop."""
    differ = 0
    for settings in SETTINGS:
        for question in (ALPHA_QUESTION, OMEGA_QUESTION):
            full = run(EfficientRAGConfig(max_hops=4, **settings), question)
            differ += full.chunk_ids != run(EfficientRAGConfig(max_hops=1, **settings), question).chunk_ids
    assert differ >= 2 * len(SETTINGS) - 2


def test_the_gate_reads_the_mth_most_probable_chunk(bench):
    hits = [{"continue_prob": p} for p in (0.2, 0.97, 0.6, 0.99)]
    assert bench.gate_open(hits, 2, 0.97) and not bench.gate_open(hits, 2, 0.98)
    assert bench.gate_open(hits, 3, 0.6) and not bench.gate_open(hits, 3, 0.61)
    assert not bench.gate_open(hits, 5, 0.0)


def write_run(folder, cfg, rows):
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps(run_json(cfg)))
    with (folder / "predictions.jsonl").open("w") as fh:
        for question, gold, qtype in rows:
            res = run(cfg, question)
            record = {"id": question, "type": qtype, "gold_chunk_ids": gold, "retrieved_ids": res.chunk_ids}
            fh.write(json.dumps(record | {"trace": {"hops": trace_to_dicts(res.trace)}}) + "\n")


def test_tables_score_the_loop_against_its_first_hop(bench, tmp_path, capsys):
    cfg = EfficientRAGConfig(max_hops=4, top_k=2, chunk_budget=3, budget_policy="best")
    # Alpha's bridge (bob) needs the second hop; Omega's question already holds omega and carla.
    rows = [(ALPHA_QUESTION, ["alpha", "bob"], "bridge"), (OMEGA_QUESTION, ["omega"], "comparison")]
    write_run(tmp_path / "validation" / "toy" / "loop", cfg, rows)
    assert run(cfg, ALPHA_QUESTION).chunk_ids[:2] == ["alpha", "bob"]
    assert run(
        EfficientRAGConfig(max_hops=1, top_k=2, chunk_budget=3, budget_policy="best"), ALPHA_QUESTION
    ).chunk_ids == ["alpha"]
    assert bench.main([str(tmp_path / "validation" / "toy" / "loop")]) == 0
    out = capsys.readouterr().out
    assert "| toy | bridge | 1 | 100.0 / 100.0" in out and "| 50.0 / 0.0 (1.00) |" in out
    # Stopping the comparison question after its first hop keeps the bridge question's hops.
    assert "| gold type is comparison (upper bound of a type router) | 100.0 / 100.0" in out
    assert "| always (first hop only) | 75.0 / 50.0" in out


def test_bad_run_folders_are_named(bench, tmp_path, capsys):
    assert bench.main([str(tmp_path / "nowhere")]) == 2
    assert "nowhere/run.json: missing" in capsys.readouterr().err
    folder = tmp_path / "direct"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"fingerprint": {"method": "direct_r"}}))
    (folder / "predictions.jsonl").write_text("")
    assert bench.main([str(folder)]) == 2
    assert "direct/run.json: not an EfficientRAG run" in capsys.readouterr().err

"""``fill_from="labeled"``: the unspent chunk budget goes to the most probable chunks the Labeler
judged at any hop, not to the question's next-ranked first-hop hits; ``rank_weight`` adds the
search's own order where the budget ranks chunks; and a fingerprint leaves both settings out at their
old values, so runs recorded before they existed are still found."""

from __future__ import annotations

import functools
import json

import pytest

from efficientrag.config import load_config
from efficientrag.data.schema import Example
from efficientrag.eval.job_runs import evaluate_efficientrag_run
from efficientrag.experiment.config import ExperimentConfig
from efficientrag.experiment.run_binding import loop_fingerprint, method_settings
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.testing.scripted_models import ALPHA_QUESTION as Q1
from efficientrag.testing.scripted_models import STOPWORDS as STOP
from efficientrag.testing.scripted_models import USEFUL_WORDS as USEFUL
from efficientrag.testing.scripted_models import InfoOnlyFilter, ScriptedLabeler, bridge_corpus
from efficientrag.testing.word_overlap import WordOverlapRetriever

# Continue probabilities of chunks the scripted Labeler tags Terminate (below the 0.5 threshold): the
# question's own third hit, omega, scores below paris, which only the second hop's query finds.
REJECTED = {"Omega": 0.2, "Paris": 0.4, "Carla": 0.1}


def loop(budget: int, **cfg) -> EfficientRAG:
    return EfficientRAG(
        WordOverlapRetriever(bridge_corpus(), STOP),
        ScriptedLabeler(USEFUL, rejected=REJECTED),
        InfoOnlyFilter(),
        EfficientRAGConfig(
            top_k=3, max_hops=4, chunk_budget=budget, budget_policy="best", fill_budget=True, **cfg
        ),
    )


def test_labeled_fill_takes_the_most_probable_judged_chunk_from_any_hop():
    by_rank = loop(3).retrieve(Q1)
    # The loop keeps alpha and bob; the question's hits are alpha, bob, omega: omega fills.
    assert by_rank.chunk_ids == ["alpha", "bob", "omega"] and by_rank.counters["filled"] == 1
    labeled = loop(3, fill_from="labeled").retrieve(Q1)
    # paris (0.4, judged for "Bob Stone") outranks omega (0.2) though the question never found it.
    assert labeled.chunk_ids == ["alpha", "bob", "paris"] and labeled.scores[-1] == pytest.approx(0.4)
    assert [h.queries for h in labeled.trace] == [h.queries for h in by_rank.trace]  # the hops are the same
    # With room for both, every judged chunk counts, most probable first; the first hits run out at 3.
    assert loop(4, fill_from="labeled").retrieve(Q1).chunk_ids == ["alpha", "bob", "paris", "omega"]
    assert loop(4).retrieve(Q1).chunk_ids == ["alpha", "bob", "omega"]


def test_a_chunk_judged_twice_fills_with_its_best_probability():
    class PerQuery(ScriptedLabeler):
        def predict(self, pairs, **kw):
            out = super().predict(pairs, **kw)
            for (query, chunk_words), pred in zip(pairs, out, strict=True):
                if chunk_words[0] == "Paris" and "Paris" in query:
                    pred.continue_prob = 0.45  # judged again by the third hop's query, higher
            return out

    rag = loop(3, fill_from="labeled")
    rag.labeler = PerQuery(USEFUL, rejected=REJECTED)
    res = rag.retrieve(Q1)
    assert res.chunk_ids == ["alpha", "bob", "paris"] and res.scores[-1] == pytest.approx(0.45)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"fill_from": "labeled", "chunk_budget": 3}, "only applies with fill_budget=true"),
        ({"fill_from": "best", "fill_budget": True, "chunk_budget": 3}, "fill_from must be"),
    ],
)
def test_bad_fill_from_is_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        EfficientRAGConfig(**kw)


def test_fingerprints_name_fill_from_only_when_it_changes_what_fills(tmp_path):
    old = EfficientRAGConfig(top_k=3, chunk_budget=3, budget_policy="best", fill_budget=True)
    new = EfficientRAGConfig(
        top_k=3, chunk_budget=3, budget_policy="best", fill_budget=True, fill_from="labeled"
    )
    settings = functools.partial(loop_fingerprint, answers=False)
    assert "fill_from" not in settings(old) and settings(new)["fill_from"] == "labeled"
    assert "rank_weight" not in settings(old)
    weighted = EfficientRAGConfig(top_k=3, chunk_budget=3, budget_policy="best", rank_weight=0.1)
    assert settings(weighted)["rank_weight"] == 0.1
    base = ["data.dataset=toy", f"work_dir={tmp_path}"]
    cfgs = [load_config(ExperimentConfig, None, [*base, *extra]) for extra in ([], ["efficientrag.fill_from=labeled",
            "efficientrag.fill_budget=true", "efficientrag.chunk_budget=3"])]  # fmt: skip
    plain, labeled = (method_settings(c, "efficientrag")["efficientrag"] for c in cfgs)
    assert "fill_from" not in plain and labeled["fill_from"] == "labeled"

    rag = loop(3)
    for model, name in ((rag.labeler, "L"), (rag.filter, "F")):
        (tmp_path / name).mkdir()
        model.source = str(tmp_path / name)
    examples = [Example(id="q0", question=Q1, answers=[], gold_chunk_ids=["alpha", "paris"])]

    def run(cfg: EfficientRAGConfig, name: str) -> tuple[dict, float]:
        summary = evaluate_efficientrag_run(
            cfg, rag.retriever, examples, tmp_path / name, rag=rag, progress=False
        )
        run_json = json.loads((summary.run_dir / "run.json").read_text(encoding="utf-8"))
        return run_json["fingerprint"]["settings"]["efficientrag"], summary["retrieval"]["all"]["recall"]

    (old_settings, old_recall), (new_settings, new_recall) = run(old, "old"), run(new, "new")
    assert "fill_from" not in old_settings and new_settings["fill_from"] == "labeled"
    assert (old_recall, new_recall) == (50.0, 100.0)  # the run ran the fill it names


def test_rank_weight_adds_the_searchs_order_where_the_budget_ranks_chunks():
    # The question's hits: alpha, bob, omega, carla, noise. Only alpha is tagged Continue; omega (rank
    # 2) scores 0.25 and carla (rank 3) 0.28: w / (1 + rank) turns the order at w = 0.5.
    scores = {"Omega": 0.25, "Carla": 0.28}

    def one_hop(**cfg) -> list[str]:
        rag = EfficientRAG(
            WordOverlapRetriever(bridge_corpus(), STOP),
            ScriptedLabeler(USEFUL, rejected=scores),
            InfoOnlyFilter(),
            EfficientRAGConfig(
                top_k=5,
                max_hops=1,
                chunk_budget=2,
                budget_policy="best",
                fill_budget=True,
                fill_from="labeled",
                **cfg,
            ),
        )
        return rag.retrieve(Q1).chunk_ids

    assert one_hop() == ["alpha", "carla"]
    assert one_hop(rank_weight=0.5) == ["alpha", "omega"]
    assert one_hop(rank_weight=0.05) == ["alpha", "carla"]  # too small to turn 0.03


def test_rank_weight_orders_the_continue_chunks_of_a_best_budget():
    q = "Which film was directed by Alpha or Omega?"  # its search ranks alpha first, omega second

    def kept(**cfg) -> list[str]:
        labeler = ScriptedLabeler(USEFUL, confidence={"Alpha": 0.6, "Omega": 0.65})
        cfg = EfficientRAGConfig(top_k=2, max_hops=1, chunk_budget=1, budget_policy="best", **cfg)
        return (
            EfficientRAG(WordOverlapRetriever(bridge_corpus(), STOP), labeler, InfoOnlyFilter(), cfg)
            .retrieve(q)
            .chunk_ids
        )

    assert kept() == ["omega"]  # the likelier
    assert kept(rank_weight=0.2) == ["alpha"]  # 0.6 + 0.2 against 0.65 + 0.1


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"rank_weight": -0.1}, "rank_weight must be >= 0"),
        ({"rank_weight": 0.1}, "only applies where the chunk budget ranks chunks"),
        ({"rank_weight": 0.1, "chunk_budget": 3}, "only applies where the chunk budget ranks chunks"),
    ],
)
def test_bad_rank_weight_is_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        EfficientRAGConfig(**kw)

"""``adapt`` hands back the better of the loop and its Labeler as a one-hop reranker, chosen on the
target's scoring sets at the same chunk budget; the calibrated candidate is scored cross-fitted, so
a calibration never wins on the questions it was fitted on."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from efficientrag.adapt import method_choice as mc
from efficientrag.adapt.choice import PSEUDO_GROUP, VALIDATION_GROUP
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.testing.scripted_models import (
    ALPHA_QUESTION,
    CONFIDENCE,
    STOPWORDS,
    InfoOnlyFilter,
    ScriptedLabeler,
    bridge_corpus,
)
from efficientrag.testing.scripted_models import USEFUL_WORDS as USEFUL
from efficientrag.testing.word_overlap import WordOverlapRetriever

LOOP = EfficientRAGConfig(
    top_k=3, max_hops=3, floor_k=2, chunk_budget=4, budget_policy="best", rank_weight=0.1
)


def test_the_candidates_are_the_reranker_and_the_loop_containing_it():
    s = mc.rerank_settings(LOOP, 4, 20)
    one, contained = s[mc.LABELER_RERANK], s[mc.LOOP_RERANK]
    assert one.max_hops == 1 and contained.max_hops == LOOP.max_hops
    for cfg in (one, contained):
        assert (cfg.budget_policy, cfg.chunk_budget, cfg.first_top_k) == ("rerank", 4, 20)
        assert (cfg.floor_k, cfg.rank_weight, cfg.hop_calibration, cfg.fill_budget) == (0, 0.0, None, False)
        assert (cfg.top_k, cfg.tag_threshold, cfg.query_mode) == (
            LOOP.top_k,
            LOOP.tag_threshold,
            LOOP.query_mode,
        )
    # A first hop never narrower than the loop's own.
    assert mc.rerank_settings(LOOP, 4, 2)[mc.LABELER_RERANK].first_top_k == LOOP.top_k


def test_the_one_hop_candidate_is_the_labeler_ranking_the_questions_hits_without_the_filter():
    rejected = {"Omega": 0.2, "Bob": 0.1, "Paris": 0.3, "Noise": 0.05, "Carla": 0.15}
    labeler = ScriptedLabeler(USEFUL, CONFIDENCE, rejected=rejected)
    retriever = WordOverlapRetriever(bridge_corpus(), STOPWORDS)
    cfg = mc.rerank_settings(EfficientRAGConfig(top_k=2), 2, 3)[mc.LABELER_RERANK]
    rag = EfficientRAG(retriever, labeler, InfoOnlyFilter(), cfg)
    res = rag.retrieve(ALPHA_QUESTION)
    hits = [r.id for r in res.trace[0].hits[0]]
    probs = {r.id: r.continue_prob for r in res.trace[0].hits[0]}
    assert len(hits) == 3 and len(res.trace) == 1 and rag.filter.calls == []
    assert res.chunk_ids == sorted(hits, key=lambda c: -probs[c])[:2]
    assert res.counters["labeler_pairs"] == 3


def _hit(cid: str, p: float) -> dict[str, Any]:
    return {
        "id": cid,
        "score": 1.0,
        "seen": False,
        "tag": "continue" if p >= 0.5 else "terminate",
        "continue_prob": p,
        "labeled_words": [],
    }


def _record(qid: str, hops: list[list[tuple[str, float]]], gold: list[str], kept: list[str], pairs: float):
    return {
        "id": qid,
        "gold_chunk_ids": gold,
        "retrieved_ids": kept,
        "counters": {"labeler_pairs": pairs},
        "trace": {"hops": [{"hits": [[_hit(c, p) for c, p in hop]]} for hop in hops]},
    }


@dataclass
class FakeJudge:
    """Scoring sets whose runs are made up per candidate: what ``choose_method`` reads of a judge."""

    runs: dict[str, dict[str, list[dict[str, Any]]]]
    groups: dict[str, str]
    asked: list[EfficientRAGConfig] = field(default_factory=list)

    @property
    def sets(self) -> list[Any]:
        return [type("S", (), {"name": n, "group": g})() for n, g in self.groups.items()]

    def records(self, models: Any, loop: EfficientRAGConfig) -> dict[str, list[dict[str, Any]]]:
        self.asked.append(loop)
        if loop.budget_policy != "rerank":
            return self.runs[mc.LOOP]
        return self.runs[mc.LABELER_RERANK if loop.max_hops == 1 else mc.LOOP_RERANK]


def _world(hops_pay: bool, n: int = 60, seed: int = 0) -> FakeJudge:
    """Questions with two gold chunks each: the second is found by a later hop only (``hops_pay``),
    or among the question's own hits, under the loop's floor (not ``hops_pay``)."""
    rng = random.Random(seed)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {
        k: {} for k in (mc.LOOP, mc.LABELER_RERANK, mc.LOOP_RERANK)
    }
    groups = {"pseudo-validation": PSEUDO_GROUP, "validation": VALIDATION_GROUP}
    for name in groups:
        for k in runs:
            runs[k][name] = []
        for i in range(n):
            q = f"{name}-{i}"
            g1, g2 = f"{q}-g1", f"{q}-g2"
            noise = [(f"{q}-n{j}", rng.uniform(0.0, 0.4)) for j in range(8)]
            first = [(g1, rng.uniform(0.6, 0.95)), *noise]
            if hops_pay:
                hops = [first, [(g2, rng.uniform(0.5, 0.9)), (f"{q}-m", rng.uniform(0.0, 0.2))]]
                one = [g1, *[c for c, _ in sorted(noise, key=lambda x: -x[1])[:3]]]
                loop_kept = [g1, g2, noise[0][0]]
            else:
                first.insert(5, (g2, rng.uniform(0.45, 0.9)))
                hops = [first, [(f"{q}-m", rng.uniform(0.0, 0.2))]]
                one = [c for c, _ in sorted(first, key=lambda x: -x[1])[:4]]
                loop_kept = [g1, noise[0][0], noise[1][0]]
            runs[mc.LOOP][name].append(_record(q, hops, [g1, g2], loop_kept, 12.0))
            runs[mc.LABELER_RERANK][name].append(_record(q, hops[:1], [g1, g2], one, 9.0))
            contained = mc.replay(
                [_record(q, hops, [g1, g2], [], 11.0)], mc.rerank_settings(LOOP, 4, 20)[mc.LOOP_RERANK]
            )
            runs[mc.LOOP_RERANK][name].append(contained[0])
    return FakeJudge(runs, groups)


@pytest.mark.parametrize("hops_pay", [True, False])
def test_the_better_method_on_the_scoring_sets_is_chosen(hops_pay):
    judge = _world(hops_pay)
    models = {"labeler": "L", "filter": "F"}
    chosen, record = mc.choose_method(judge, models, LOOP, mc.MethodChoiceConfig(rerank_top_k=20))
    scores = {name: c["score"] for name, c in record["candidates"].items()}
    assert list(scores) == [mc.LABELER_RERANK, mc.LOOP, mc.LOOP_RERANK, mc.CALIBRATED]
    assert record["chosen"] == max(scores, key=lambda n: scores[n])
    if hops_pay:
        assert scores[mc.LOOP] > scores[mc.LABELER_RERANK]
        assert record["chosen"] != mc.LABELER_RERANK
    else:
        # Both gold among the question's hits: the one-hop reranker finds them, the loop's floor does not.
        assert scores[mc.LABELER_RERANK] > scores[mc.LOOP]
        assert record["chosen"] in (mc.LABELER_RERANK, mc.LOOP_RERANK, mc.CALIBRATED)
    assert chosen.labeler == "L" and chosen.filter == "F"
    assert record["chunk_budget"] == 4
    # The contained loop keeps the reranker's first hop: never below it where no later hop outscores.
    assert scores[mc.LOOP_RERANK] >= scores[mc.LABELER_RERANK] - 1e-9 or hops_pay
    ranks = record["candidates"][mc.LABELER_RERANK]["sets"]["validation"]
    assert ranks["labeler_pairs"] == 9.0 and ranks["num_chunks"] == 4.0
    if record["chosen"] == mc.CALIBRATED:
        assert chosen.hop_calibration is not None and chosen.budget_policy == "rerank"


def test_ties_go_to_the_cheaper_candidate():
    judge = _world(hops_pay=False)
    # The same records for every candidate: equal scores, the one-hop reranker (listed first) wins.
    same = judge.runs[mc.LOOP_RERANK]
    judge.runs = {k: same for k in judge.runs}
    chosen, record = mc.choose_method(judge, {"labeler": "L", "filter": "F"}, LOOP, mc.MethodChoiceConfig())
    assert record["chosen"] == mc.LABELER_RERANK and chosen.max_hops == 1


def test_the_calibrated_candidate_is_scored_on_questions_its_calibration_never_saw(monkeypatch):
    fitted: dict[int, set[str]] = {}
    replayed: list[tuple[str, int]] = []
    real_fit, real_replay = mc.fit_calibration, mc.replay

    def fit(records, max_hops):
        cal = real_fit(records, max_hops)
        fitted[id(cal)] = {r["id"] for r in records}
        return cal

    def replay(records, cfg):
        if cfg.hop_calibration is not None:
            replayed.extend((r["id"], id(cfg.hop_calibration)) for r in records)
        return real_replay(records, cfg)

    monkeypatch.setattr(mc, "fit_calibration", fit)
    monkeypatch.setattr(mc, "replay", replay)
    judge = _world(hops_pay=True)
    runs, final = mc.cross_fitted(judge.runs[mc.LOOP_RERANK], mc.rerank_settings(LOOP, 4, 20)[mc.LOOP_RERANK])
    ids = {r["id"] for rs in judge.runs[mc.LOOP_RERANK].values() for r in rs}
    assert {q for q, _ in replayed} == ids and len(replayed) == len(ids)
    assert all(q not in fitted[cal] for q, cal in replayed)
    assert fitted[id(final)] == ids  # what ships is fitted on every question
    assert 0 < len({cal for _, cal in replayed}) <= 2


def test_too_few_judgements_leave_the_calibrated_candidate_out():
    judge = _world(hops_pay=False, n=3)
    _, record = mc.choose_method(judge, {"labeler": "L", "filter": "F"}, LOOP, mc.MethodChoiceConfig())
    assert mc.CALIBRATED not in record["candidates"] and "not a candidate" in record["notes"][mc.CALIBRATED]


def test_without_a_chunk_budget_the_candidates_get_the_loops_mean_chunk_count():
    judge = _world(hops_pay=True)
    loop = EfficientRAGConfig(top_k=3, max_hops=3)
    _, record = mc.choose_method(
        judge, {"labeler": "L", "filter": "F"}, loop, mc.MethodChoiceConfig(rerank_top_k=5)
    )
    assert record["chunk_budget"] == 3  # every made-up loop run keeps 3 chunks
    assert {c.chunk_budget for c in judge.asked if c.budget_policy == "rerank"} == {3}
    assert {c.first_top_k for c in judge.asked if c.budget_policy == "rerank"} == {5}


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="rerank_top_k must be >= 1"):
        mc.MethodChoiceConfig(rerank_top_k=0)


def test_each_group_alone_says_what_it_would_have_chosen():
    # Hops pay on the pseudo-questions, not on the validation questions: each group alone chooses
    # its own winner, and the record keeps both beside the choice made on all of them.
    pays, flat = _world(hops_pay=True), _world(hops_pay=False, seed=1)
    for name in pays.runs:
        pays.runs[name]["validation"] = flat.runs[name]["validation"]
    _, record = mc.choose_method(pays, {"labeler": "L", "filter": "F"}, LOOP, mc.MethodChoiceConfig())
    assert record["groups"] == {"pseudo-validation": PSEUDO_GROUP, "validation": VALIDATION_GROUP}
    by = record["by_group"]
    sets = {n: c["sets"] for n, c in record["candidates"].items()}

    def best(set_name):
        return max(
            sets,
            key=lambda n: (sets[n][set_name]["recall"] + sets[n][set_name]["all_gold"], -list(sets).index(n)),
        )

    assert by[PSEUDO_GROUP] == best("pseudo-validation") != mc.LABELER_RERANK
    assert by[VALIDATION_GROUP] == best("validation") != mc.LOOP

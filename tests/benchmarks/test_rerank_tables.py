"""The rerank benchmark's reading of results: every ranked method at the loop's own chunk count, per
dataset and per question type, with seconds per question."""

import pytest

BENCHMARK = "rerank_tables"  # the conftest fixture `bench` imports it


def _agg(recall, all_gold, k, n=2):
    return {"recall": recall, "all_gold": all_gold, "answer_recall": recall, "num_chunks": k, "n": n}


def _ranked_record(rid, qtype, by_k):
    """A per-question record: its scores are fractions (the summaries' are percentages)."""
    return {"id": rid, "type": qtype, "retrieval": {k: _agg(r, a, float(k), 1) for k, (r, a) in by_k.items()}}


def runs():
    eff_records = [
        {"id": "2hop__1", "type": None, "retrieval": {"all": _agg(1.0, 1.0, 5.0, 1)}},
        {"id": "3hop1__2", "type": None, "retrieval": {"all": _agg(0.5, 0.0, 7.0, 1)}},
    ]
    rr_records = [
        _ranked_record("2hop__1", None, {"4": (0.5, 0.0), "6": (1.0, 1.0)}),
        _ranked_record("3hop1__2", None, {"4": (0.0, 0.0), "6": (0.4, 0.0), "8": (0.6, 0.0)}),
    ]
    return {
        "EfficientRAG": {
            "summary": {"n": 2, "retrieval": {"all": _agg(75.0, 50.0, 6.0)}, "counters_mean": {"time_labeler_s": 0.2, "time_retrieval_s": 0.05, "time_encode_s": 0.01,
                                                                                      "time_search_s": 0.04, "labeler_pairs": 9.0}},
            "records": eff_records,
        },
        "rerank N=20": {
            "summary": {"n": 2, "retrieval": {"4": _agg(25.0, 0.0, 4), "6": _agg(70.0, 50.0, 6), "8": _agg(80.0, 50.0, 8)},
                        "counters_mean": {"time_retrieval_s": 0.01, "time_rerank_s": 0.1}},
            "records": rr_records,
        },
    }  # fmt: skip


def test_question_types_come_from_the_record_or_musiques_hop_count(bench):
    assert bench.question_type({"id": "2hop__13548_13529", "type": None}) == "2hop"
    assert bench.question_type({"id": "3hop1__9285_5188_23307"}) == "3hop"
    assert bench.question_type({"id": "5a8b57f25542995d1e6f1371", "type": "bridge"}) == "bridge"
    # HotpotQA's IRCoT dev file names no type: such a question is counted, as untyped.
    assert bench.question_type({"id": "5a8c7595554299585d9e36b6", "type": ""}) == "untyped"


def test_seconds_count_every_timed_stage_once_and_nothing_else(bench):
    # The loop's retrieval time holds its encode and search parts: counted once.
    assert bench.seconds_per_question(runs()["EfficientRAG"]["summary"]) == pytest.approx(0.25)
    assert bench.seconds_per_question(runs()["rerank N=20"]["summary"]) == pytest.approx(0.11)


def test_side_by_side_timings_replace_each_runs_own_and_the_report_says_which(bench):
    timed = runs()
    timed["rerank N=20"]["timed_s"] = 0.5
    assert bench.run_seconds(timed["rerank N=20"]) == 0.5
    assert bench.run_seconds(timed["EfficientRAG"]) == pytest.approx(0.25)  # not timed: its own
    assert "| rerank N=20 @6.00 | 70.0 | 50.0 | 70.0 | 0.500 |" in bench.dataset_tables(
        "m", "in domain", timed
    )
    kw = dict(command="c", retriever="bm25", train_on=["musique"], setting=("s", []), loop_scores={"s": 1.0},
              validation_n={"musique": 1}, reranker={"recipe": "r", "recipes": {"r": {"best_score": 1.0}}},
              results={"musique": timed}, minutes=1.0)  # fmt: skip
    assert "timed side by side on the first 50 questions" in bench.render(**kw, timed_on=50)
    assert "each run's own stage timings" in bench.render(**kw)


def test_a_ranked_run_is_read_at_the_loops_chunk_count_overall_and_per_type(bench):
    lines = bench.dataset_tables("musique", "in domain", runs())
    text = "\n".join(lines)
    assert "| rerank N=20 @6.00 | 70.0 | 50.0 | 70.0 | 0.110 |" in text
    # Per type: the loop kept 5 chunks for the 2-hop question (the reranker at 5: between @4 and @6)
    # and 7 for the 3-hop one (between @6 and @8).
    assert "| 2hop | 1 | 5.00 | 100.0 / 100.0 | 75.0 / 50.0 |" in text
    assert "| 3hop | 1 | 7.00 | 50.0 / 0.0 | 50.0 / 0.0 |" in text
    # Outside the measured cut-offs there is nothing to compare with, and the table says so.
    far = runs()
    far["EfficientRAG"]["summary"]["retrieval"]["all"]["num_chunks"] = 12.0
    assert not any(
        line.startswith("| rerank N=20 @12") for line in bench.dataset_tables("x", "left out", far)
    )


def test_the_report_names_the_choice_and_where_each_dataset_stands(bench):
    text = bench.render(
        command="python benchmarks/retrieval_rerank.py --retriever bm25",
        retriever="bm25",
        train_on=["2wikimultihopqa", "musique"],
        setting=("k6-t0.2-f3+first20", ["top_k=6", "first_top_k=20"]),
        loop_scores={"k6-t0.2-f3": 60.0, "k6-t0.2-f3+first20": 62.5},
        validation_n={"2wikimultihopqa": 50, "musique": 45},
        reranker={
            "recipe": "neg4",
            "recipes": {"neg4": {"best_score": 61.234}, "neg8": {"best_score": 60.0}},
        },
        results={"musique": runs(), "hotpotqa": runs(), "2wikimultihopqa open-domain": runs()},
        minutes=12.0,
        notes=["**hotpotqa after adaptation.** adapt kept the adapted models."],
    )
    assert "\n\n**hotpotqa after adaptation.** adapt kept the adapted models.\n\n### musique" in text
    assert "neg4 61.23, neg8 60.00; used: neg4" in text
    assert "protocol score k6-t0.2-f3 60.00, k6-t0.2-f3+first20 62.50): `k6-t0.2-f3+first20`" in text
    assert (
        "### musique (2 dev questions, in domain)" in text
        and "### hotpotqa (2 dev questions, left out)" in text
        and "### 2wikimultihopqa open-domain (2 questions, in domain)" in text
    )


def test_the_plot_draws_each_ranked_curve_and_the_loops_point(bench, tmp_path):
    path = bench.plot_dataset("musique", "in domain", runs(), tmp_path / "plot.png")
    assert path.is_file() and path.stat().st_size > 1000


def test_the_report_shows_the_fusion_table_when_the_rerankers_were_fused(bench):
    by_file = {
        "musique": {"the search's own order": {"none": 50.0}, "rerank N=20": {"none": 40.0, "rrf": 45.5}}
    }
    kw = dict(command="c", retriever="bm25", train_on=["musique"], setting=("s", []), loop_scores={"s": 1.0},
              validation_n={"musique": 1}, results={"musique": runs()}, minutes=1.0)  # fmt: skip
    plain = {"recipe": "r", "recipes": {"r": {"best_score": 1.0}}}
    assert "fused with the search's order" not in bench.render(**kw, reranker=plain)
    text = bench.render(
        **kw, reranker={**plain, "fusion": {"rerank N=20": "rrf"}, "fusion_validation": by_file}
    )
    assert "fused with the search's order by reciprocal rank fusion" in text
    assert "| rerank N=20 | rrf | 40.00 / **45.50** | 40.00 / **45.50** |" in text
    # Validation keeps no reranker where the search's own order scores higher.
    assert "musique: no reranker, the search's own order 50.00." in text

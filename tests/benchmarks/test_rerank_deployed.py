"""Rerankers as deployed on dev: the row validation hands a user on each set, read at the loop's
chunk count from the committed dev reports, with the paired gap to the search's own order."""

import json

import pytest

BENCHMARK = "rerank_deployed"  # the conftest fixture `bench` imports it

SEARCH = "the search's own order"
# MuSiQue's validation scores per row and fusion; the chosen fusion is what counts.
BY_FILE = {
    "musique": {
        SEARCH: {"none": 30.0},
        "rerank N=20": {"none": 70.0, "rrf": 40.0},
        "Labeler rerank N=20": {"none": 30.0, "rrf": 35.0},
    },
}


def report(search, loop, chunks, name="musique", where="in domain"):
    """A committed dev report's section: ``search`` and ``loop`` as "recall / all-gold"."""
    search_cells, loop_cells = search.replace(" / ", " | "), loop.replace(" / ", " | ")
    return "\n".join(
        [
            "## EfficientRAG beside retrieve-then-rerank on dev questions (search: bm25)",
            "",
            f"### {name} (4 dev questions, {where})",
            "",
            f"At EfficientRAG's own chunk count ({chunks} per question):",
            "",
            "| method | recall | all-gold | answer recall | s/q |",
            "|---|---|---|---|---|",
            f"| **EfficientRAG** | {loop_cells} | 40.0 | 1.000 |",
            f"| Direct-R @{chunks} | {search_cells} | 30.0 | 0.000 |",
            "",
        ]
    )


def write(root, name, text):
    (root / "bm25").mkdir(parents=True, exist_ok=True)
    (root / "bm25" / name).write_text(text)


def test_a_set_in_two_reports_must_agree(bench, tmp_path):
    write(tmp_path, "a+b_to_musique.md", report("48.2 / 9.3", "49.6 / 14.3", "6.54"))
    write(tmp_path, "a+b_to_x+musique.md", report("48.2 / 9.3", "49.6 / 14.3", "6.54"))
    write(tmp_path, "c+d_to_musique.md", report("1.0 / 1.0", "2.0 / 2.0", "3.00"))
    sections = bench.loop_sections(tmp_path, "bm25", ["a", "b"])
    assert list(sections) == ["musique"]
    assert sections["musique"].chunks == 6.54
    assert sections["musique"].rows["EfficientRAG"][:2] == (49.6, 14.3)
    assert sections["musique"].rows["Direct-R"][:2] == (48.2, 9.3)
    write(tmp_path, "a+b_to_y+musique.md", report("48.2 / 9.3", "49.6 / 14.3", "6.60"))
    with pytest.raises(ValueError, match=r"a\+b_to_musique.md and a\+b_to_y\+musique.md.*musique"):
        bench.loop_sections(tmp_path, "bm25", ["a", "b"])


# Per-question (recall, all-gold) at K = 6 and 7 of four questions: the search's own order and the
# reranker, which finds more at 7.
RUNS = {
    "direct_r_k": {6: [(0.5, 0), (0.5, 0), (1.0, 1), (0.0, 0)], 7: [(0.5, 0), (1.0, 1), (1.0, 1), (0.0, 0)]},
    "rerank-n20-rrf": {6: [(0.5, 0), (1.0, 1), (1.0, 1), (0.5, 0)], 7: [(1.0, 1), (1.0, 1), (1.0, 1), (0.5, 0)]},
}  # fmt: skip


@pytest.fixture
def runs(bench, monkeypatch):
    """``evaluate_ranked_run`` replaced by RUNS, each written as a run folder would be (its records'
    scores as fractions, its summary's means in %)."""
    import efficientrag.eval.job_runs as job_runs
    from efficientrag.baselines.direct_r import DirectRetrieval

    built = []

    def evaluate_ranked_run(method, examples, out, *, ks, progress):
        rows = RUNS[out.name]
        out.mkdir(parents=True, exist_ok=True)
        with (out / "predictions.jsonl").open("w") as fh:
            for i, ex in enumerate(examples):
                scores = {
                    str(k): {"recall": v[i][0], "all_gold": v[i][1], "num_chunks": k} for k, v in rows.items()
                }
                fh.write(json.dumps({"id": ex, "type": "2hop", "retrieval": scores}) + "\n")
        retrieval = {
            str(k): {m: 100 * sum(r[j] for r in v) / len(v) for j, m in enumerate(("recall", "all_gold"))}
            | {"answer_recall": 0.0}
            for k, v in rows.items()
        }
        return {"retrieval": retrieval, "counters_mean": {"time_retrieval_s": 0.05, "time_rerank_s": 0.2}}

    def rerankers(pool, models, reranker, fusion, only):
        built.append((fusion, only))
        return {"rerank N=20": (object(), "rerank-n20-rrf")}

    monkeypatch.setattr(job_runs, "evaluate_ranked_run", evaluate_ranked_run)
    monkeypatch.setattr(DirectRetrieval, "ranking", classmethod(lambda cls, retriever, ks: "search"))
    monkeypatch.setattr(bench, "rerankers", rerankers)
    return built


def args(tmp_path):
    return type(
        "Args",
        (),
        {"quiet": True, "shared_data": str(tmp_path), "retriever": "bm25", "loop_reports": str(tmp_path)},
    )()


POOL = type("Pool", (), {"examples": ["q1", "q2", "q3", "q4"], "retriever": None})()


def test_the_deployed_row_is_read_at_the_loops_chunk_count_beside_the_search(bench, runs, tmp_path):
    # At 6.75 chunks the search reads 0.5 + 0.75 * 0.125 = 0.59375 recall, 0.25 + 0.75 * 0.25 all-gold.
    write(tmp_path, "musique_to_musique.md", report("59.4 / 43.8", "70.0 / 50.0", "6.75"))
    sets = {
        "musique": ("musique", POOL, tmp_path / "dev" / "musique"),
        "hotpotqa": ("hotpotqa", POOL, tmp_path),
    }
    by_file = {"musique": BY_FILE["musique"]}
    fusion = {"rerank N=20": "rrf"}
    validation = {"fusion": fusion, "fusion_validation": {"musique": {**by_file["musique"]}}}
    validation["fusion_validation"]["musique"].pop("Labeler rerank N=20")
    text = bench.write_report(
        args(tmp_path), tmp_path, ["musique"], sets, tmp_path, tmp_path, validation, "cmd", 0.0
    )
    assert runs == [({"rerank N=20": "rrf"}, ["rerank N=20"])]
    row = next(line for line in text.splitlines() if line.startswith("| musique |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # Reranker at 6.75: recall 0.75 + 0.75 * 0.125 = 0.84375, all-gold 0.5 + 0.75 * 0.25 = 0.6875; its
    # gap, paired at 6.75 too, is what the two columns show: +25.0 recall, +25.0 all-gold.
    assert cells[:7] == [
        "musique",
        "4",
        "6.75",
        "70.0 / 50.0",
        "59.4 / 43.8",
        "rerank N=20, fused",
        "84.4 / 68.8",
    ]
    assert cells[7].startswith("+25.0 [") and " / +25.0 [" in cells[7]
    assert cells[8:] == ["0.25", "20"]
    assert "Not in the committed dev reports, so not read: hotpotqa." in text
    assert (tmp_path / "rerank-deployed-musique.md").read_text() == text + "\n"
    saved = json.loads((tmp_path / "rerank-deployed-musique.json").read_text())
    assert saved["musique"]["report"] == "musique_to_musique.md"
    assert saved["musique"]["gap"]["recall"]["mean"] == pytest.approx(0.84375 - 0.59375)


def test_a_search_order_that_differs_from_the_report_stops_the_comparison(bench, runs, tmp_path):
    write(tmp_path, "musique_to_musique.md", report("61.0 / 43.8", "70.0 / 50.0", "6.75"))
    sets = {"musique": ("musique", POOL, tmp_path / "dev")}
    validation = {
        "fusion": {"rerank N=20": "rrf"},
        "fusion_validation": {"musique": {SEARCH: {"none": 0.0}, "rerank N=20": {"rrf": 1.0}}},
    }
    with pytest.raises(
        ValueError, match=r"musique_to_musique.md, set musique: the search's own order reads 59.4"
    ):
        bench.write_report(
            args(tmp_path), tmp_path, ["musique"], sets, tmp_path, tmp_path, validation, "cmd", 0.0
        )


def test_no_committed_report_for_the_direction_is_an_error(bench, runs, tmp_path):
    sets = {"musique": ("musique", POOL, tmp_path / "dev")}
    validation = {
        "fusion": {"rerank N=20": "rrf"},
        "fusion_validation": {"musique": {SEARCH: {"none": 0.0}, "rerank N=20": {"rrf": 1.0}}},
    }
    with pytest.raises(ValueError, match="without --deployed-only first"):
        bench.write_report(
            args(tmp_path), tmp_path, ["musique"], sets, tmp_path, tmp_path, validation, "cmd", 0.0
        )


def test_where_validation_keeps_no_reranker_the_search_itself_is_deployed(bench, runs, tmp_path):
    write(tmp_path, "musique_to_musique.md", report("59.4 / 43.8", "70.0 / 50.0", "6.75"))
    sets = {"musique": ("musique", POOL, tmp_path / "dev" / "musique")}
    validation = {
        "fusion": {"rerank N=20": "rrf"},
        "fusion_validation": {
            "musique": {SEARCH: {"none": 45.0}, "rerank N=20": {"none": 70.0, "rrf": 40.0}}
        },
    }
    text = bench.write_report(
        args(tmp_path), tmp_path, ["musique"], sets, tmp_path, tmp_path, validation, "cmd", 0.0
    )
    assert runs == []  # no reranker built
    row = next(line for line in text.splitlines() if line.startswith("| musique |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4:7] == ["59.4 / 43.8", "no reranker (the search itself)", "59.4 / 43.8"]
    assert cells[7] == "+0.0 [+0.0, +0.0] / +0.0 [+0.0, +0.0]" and cells[9] == "0"

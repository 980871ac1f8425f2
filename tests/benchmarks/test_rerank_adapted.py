"""``retrieval_rerank.py --adapt``'s own parts: the adapted loop's setting is chosen by adapt's
score of each candidate loop, and the report says what adapt kept and what was chosen."""

from pathlib import Path

BENCHMARK = "rerank_adapted"  # the conftest fixture `bench` imports it


def test_the_adapted_loop_takes_the_candidate_adapts_judge_scores_highest(bench, tmp_path, monkeypatch):
    from efficientrag.adapt.choice import Judge, Scores

    seen = []

    def score(self, models):
        # Each candidate's own loop reaches the judge, with the adapted pair and its own folder.
        seen.append((self.loop.fill_budget, self.loop.first_top_k, self.out_dir.name, models["labeler"]))
        value = 70.0 if self.loop.fill_budget else 60.0 + (self.loop.first_top_k or 0) / 10
        return Scores(Path(models["labeler"]), Path(models["filter"]), score=value)

    monkeypatch.setattr(Judge, "score", score)
    args = type("Args", (), {"quiet": True})()
    candidates = {
        "k6": ["top_k=6", "chunk_budget=7"],
        "k6+first20": ["top_k=6", "chunk_budget=7", "first_top_k=20"],
        "k6+fill": ["top_k=6", "chunk_budget=7", "fill_budget=true"],
    }
    chosen, scores = bench.choose_adapted_loop(
        args, tmp_path / "adapted", candidates, [], tmp_path / "choice"
    )
    assert chosen == ("k6+fill", candidates["k6+fill"])
    assert scores == {"k6": 60.0, "k6+first20": 62.0, "k6+fill": 70.0}
    labeler = tmp_path / "adapted" / "labeler" / "best"
    assert seen == [
        (False, None, "k6", labeler),
        (False, 20, "k6+first20", labeler),
        (True, None, "k6+fill", labeler),
    ]


def test_the_note_names_the_kept_models_the_ratios_and_the_chosen_setting(bench):
    summary = {
        "kept": "adapted",
        "stages": {
            "corpus": {"candidates": [{"ratio": "1.0", "score": 71.234}, {"ratio": "2.0", "score": 73.5}]}
        },
    }
    note = bench.adaptation_note(
        "hotpotqa", summary, ("k6+fill", ["top_k=6", "fill_budget=true"]), {"k6": 70.0, "k6+fill": 71.5}
    )
    assert "kept the adapted models (candidates: ratio 1.0 71.23, ratio 2.0 73.50)" in note
    assert "k6 70.00, k6+fill 71.50): `k6+fill` = `top_k=6,fill_budget=true`" in note
    assert note.startswith("**hotpotqa after adaptation.**")
    # adapt kept the given models (they scored higher): the note says so.
    assert "kept the given models." in bench.adaptation_note(
        "musique", {"kept": "given"}, ("k6", []), {"k6": 1.0}
    )

"""The containing loop under the honest protocol: the method is chosen on the training files'
validation part only (each over its own search), a direction without trained models is refused, and
the report says which set is in domain and which left out."""

import argparse
from pathlib import Path

import pytest

from efficientrag.data.schema import Example
from efficientrag.training.pool import Pool

BENCHMARK = "containment_protocol"  # the conftest fixture `bench` imports it


COMMAND = "python benchmarks/containment_protocol.py --train-on musique"


def _args(**kw):
    base = {"validation_ratio": 0.25, "retriever": "bm25", "labeler_overrides": [], "filter_overrides": []}
    base.update(quiet=True, **kw)
    return argparse.Namespace(**base)


def _pool(name, n, search):
    examples = [
        Example(id=f"{name}-{i}", question=f"q{i}?", answers=["a"], gold_chunk_ids=["c"]) for i in range(n)
    ]
    return Pool(name, None, examples, search)


def _models(folder):
    for name in ("labeler", "filter"):
        (folder / name).mkdir()
        (folder / name / "model.safetensors").write_bytes(name.encode())
    return {"labeler": folder / "labeler", "filter": folder / "filter"}


def test_the_method_is_chosen_on_each_training_files_validation_part_over_its_own_search(bench, tmp_path):
    from efficientrag.data.split import VALIDATION, split_of

    searches = {"2wikimultihopqa": object(), "musique": object()}
    pools = {name: _pool(name, 40, s) for name, s in searches.items()}
    sets = bench.scoring_sets(bench.ProtocolOptions(retriever="bm25", quiet=True), tmp_path, pools)
    assert [s.name for s in sets] == ["2wikimultihopqa", "musique"]
    for s in sets:
        assert s.group == "validation" and s.retriever is searches[s.name]
        # The synthesis's split (its seed is the quickstart's split_seed + 1), never a training question.
        want = [
            ex.id
            for ex in pools[s.name].examples
            if split_of(ex.id, validation_ratio=0.25, seed=1) == VALIDATION
        ]
        assert [ex.id for ex in s.examples] == want and 0 < len(want) < 40


def test_a_direction_without_trained_models_is_refused_naming_the_folder(bench, tmp_path):
    (tmp_path / "labeler" / "best").mkdir(parents=True)
    (tmp_path / "labeler" / "best" / "model.safetensors").write_bytes(b"x")
    with pytest.raises(SystemExit, match=r"filter/best: no trained filter"):
        bench.direction_models(tmp_path)
    (tmp_path / "filter" / "best").mkdir(parents=True)
    (tmp_path / "filter" / "best" / "model.safetensors").write_bytes(b"y")
    assert bench.direction_models(tmp_path)["filter"] == Path(tmp_path / "filter" / "best")


def test_the_report_shows_the_validation_choice_once_and_each_set_in_or_out_of_domain(bench, tmp_path):
    models = _models(tmp_path)
    row = {"n": 5.0, "recall": 80.0, "all_gold": 60.0, "num_chunks": 7.0, "labeler_pairs": 20.0}
    method = {
        "chosen": "loop_rerank",
        "chunk_budget": 7,
        "rerank_top_k": 20,
        "groups": {"musique": "validation"},
        "by_group": {"validation": "loop_rerank"},
        "candidates": {
            "labeler_rerank": {"score": 70.0, "sets": {"musique": row}},
            "loop_rerank": {"score": 71.0, "sets": {"musique": row}},
        },
    }
    sections = {
        "hotpotqa": ["HOTPOT ROWS"],
        "musique": ["MUSIQUE ROWS"],
        "2wikimultihopqa open-domain": ["OD"],
    }
    text = bench.report(_args(), ["musique"], ("k6", []), models, (method, None), sections, 3.0, COMMAND)
    assert text.count("### The retrieval method (chosen by the training files' validation questions") == 1
    assert "pseudo-questions" not in text
    assert "| **loop_rerank** | 80.0 / 60.0 / 7.00 / 20.0 | 71.00 |" in text
    assert "## hotpotqa (left out)\n\nHOTPOT ROWS" in text
    assert "## musique (in domain)\n\nMUSIQUE ROWS" in text
    assert "## 2wikimultihopqa open-domain (left out)" in text
    assert "python benchmarks/containment_protocol.py --train-on musique" in text


def test_pair_budgets_add_trade_off_rows_of_the_chosen_loop_and_leave_the_choice_alone(bench):
    from efficientrag.config import load_config
    from efficientrag.pipeline.config import EfficientRAGConfig

    loop = {"max_hops": 4, "first_top_k": 20, "budget_policy": "rerank", "chunk_budget": 7, "floor_k": 0}
    method = {
        "chosen": "loop_rerank_calibrated",
        "candidates": {
            "labeler_rerank": {"score": 1.0, "efficientrag": {**loop, "max_hops": 1}},
            "loop_rerank_calibrated": {"score": 2.0, "efficientrag": loop},
        },
    }
    on_dev = bench.with_pair_budgets(method, [25, 30])
    assert list(on_dev["candidates"]) == [
        "labeler_rerank",
        "loop_rerank_calibrated",
        "loop_rerank_calibrated, pair_budget=25",
        "loop_rerank_calibrated, pair_budget=30",
    ]
    capped = on_dev["candidates"]["loop_rerank_calibrated, pair_budget=25"]["efficientrag"]
    assert load_config(EfficientRAGConfig, data=capped).pair_budget == 25
    assert "pair_budget" not in method["candidates"]["loop_rerank_calibrated"]["efficientrag"]
    assert on_dev["chosen"] == "loop_rerank_calibrated"
    # A chosen one-hop reranker judges its N and nothing more: no trade-off to show.
    reranker = {**method, "chosen": "labeler_rerank"}
    assert bench.with_pair_budgets(reranker, [25]) is reranker


def test_target_pseudo_questions_come_from_each_left_out_corpus_alone(bench):
    from efficientrag.adapt.pseudo_rows import PseudoRowsConfig
    from efficientrag.data.corpus import Corpus
    from efficientrag.data.schema import Chunk
    from efficientrag.retrieval.config import RetrieverConfig
    from efficientrag.retrieval.factory import build_retriever

    chunks = [
        Chunk(
            "kiss",
            "Kiss and Tell (1945 film)",
            "Kiss and Tell is a 1945 comedy film starring Shirley Temple.",
        ),
        Chunk(
            "shirley", "Shirley Temple", "Shirley Temple was an actress, named ambassador to Ghana in 1974."
        ),
        Chunk("ghana", "Ghana", "Ghana is a country in West Africa; its capital is Accra."),
        Chunk("n", "Noise", "Nothing to see in 1999 here."),
    ]
    corpus = Corpus(chunks)
    search = build_retriever(RetrieverConfig(kind="bm25"), corpus, None, show_progress=False)
    # In-domain and open-domain pools are never read: no corpus to make questions from.
    pools = {
        "hotpotqa": Pool("hotpotqa", corpus, [], search),
        "musique": Pool("musique", None, [], object()),
        "2wikimultihopqa open-domain": Pool("od", None, [], object()),
    }
    cfg = PseudoRowsConfig(validation_ratio=0.999)
    sets = bench.target_pseudo_sets(pools, ["musique", "2wikimultihopqa"], False, cfg)
    assert [s.name for s in sets] == ["hotpotqa pseudo-validation", "hotpotqa pseudo-single"]
    assert all(s.group == "pseudo" and s.retriever is search for s in sets)
    gold = {c for s in sets for ex in s.examples for c in ex.gold_chunk_ids}
    assert gold <= {"kiss", "shirley", "ghana"} and "kiss" in gold
    assert all(ex.type == "pseudo-single" for ex in sets[1].examples)


def test_the_report_sets_the_pseudo_questions_choice_beside_the_validation_one(bench, tmp_path):
    models = _models(tmp_path)
    row = {"n": 5.0, "recall": 80.0, "all_gold": 60.0, "num_chunks": 7.0, "labeler_pairs": 20.0}

    def choice(chosen, group, set_name):
        return {
            "chosen": chosen,
            "chunk_budget": 7,
            "rerank_top_k": 20,
            "groups": {set_name: group},
            "by_group": {group: chosen},
            "candidates": {"labeler_rerank": {"score": 70.0, "sets": {set_name: row}}},
        }

    method = choice("loop_rerank_calibrated", "validation", "musique")
    pseudo = choice("labeler_rerank", "pseudo", "hotpotqa pseudo-single")
    text = bench.report(
        _args(), ["musique"], ("k6", []), models, (method, pseudo), {"hotpotqa": ["R"]}, 1.0, COMMAND
    )
    assert "### The retrieval method (chosen by `adapt`'s pseudo-questions over the left-out" in text
    assert "hotpotqa pseudo-single (pseudo): recall" in text
    assert (
        "On the left-out corpora's pseudo-questions `adapt` would have chosen `labeler_rerank`; the "
        "training files' validation questions chose `loop_rerank_calibrated`"
    ) in text


def test_target_pseudo_without_a_left_out_set_is_refused_before_any_training(bench, tmp_path, capsys):
    argv = ["--shared-data", str(tmp_path), "--work-dir", str(tmp_path / "w"), "--target-pseudo"]
    argv += ["--train-on", "hotpotqa,musique", "--eval-on", "musique"]
    with pytest.raises(SystemExit) as exc:
        bench.main(argv)
    assert exc.value.code == 2 and "--target-pseudo needs a left-out set" in capsys.readouterr().err
    assert not (tmp_path / "w").exists()


def test_the_pairs_chosen_on_validation_become_one_more_dev_row(bench):
    from efficientrag.adapt.pair_choice import AS_CHOSEN
    from efficientrag.pipeline.config import EfficientRAGConfig

    method = {"chosen": "loop_rerank", "candidates": {"loop_rerank": {"efficientrag": {"top_k": 10}}}}
    record = {
        "chosen": "later hops top 6",
        "tolerance": 1.0,
        "candidates": {
            AS_CHOSEN: {"score": 80.0, "pairs": 40.0},
            "later hops top 6": {"score": 79.5, "pairs": 28.0},
        },
    }
    picked = EfficientRAGConfig(top_k=6, first_top_k=10)
    out = bench.with_pair_choice(method, picked, record)
    row = "loop_rerank, later hops top 6 (pairs chosen on validation)"
    assert list(out["candidates"]) == ["loop_rerank", row] and out["chosen"] == "loop_rerank"
    assert out["candidates"][row]["efficientrag"]["top_k"] == 6 and out["pairs"] is record
    assert (
        "**later hops top 6**" in bench.pair_lines(record)[0]
        and "79.50 at 28.0 pairs" in bench.pair_lines(record)[0]
    )
    same = bench.with_pair_choice(
        method, picked, {"chosen": AS_CHOSEN, "why": "a one-hop method judges its N pairs"}
    )
    assert list(same["candidates"]) == ["loop_rerank"] and "one-hop" in bench.pair_lines(same["pairs"])[0]

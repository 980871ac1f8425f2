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


def _choice(candidates):
    """A method choice on one validation set (musique) that chose ``loop_rerank``."""
    return {
        "chosen": "loop_rerank",
        "chunk_budget": 7,
        "rerank_top_k": 20,
        "groups": {"musique": "validation"},
        "by_group": {"validation": "loop_rerank"},
        "candidates": candidates,
    }


def test_the_report_shows_the_validation_choice_once_and_each_set_in_or_out_of_domain(bench, tmp_path):
    models = _models(tmp_path)
    row = {"n": 5.0, "recall": 80.0, "all_gold": 60.0, "num_chunks": 7.0, "labeler_pairs": 20.0}
    method = _choice(
        {
            "labeler_rerank": {"score": 70.0, "sets": {"musique": row}},
            "loop_rerank": {"score": 71.0, "sets": {"musique": row}},
        }
    )
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


def test_the_pairs_chosen_on_validation_become_a_dev_row_and_leave_the_choice_table_alone(bench, tmp_path):
    from efficientrag.adapt.pair_choice import AS_CHOSEN
    from efficientrag.pipeline.config import EfficientRAGConfig

    row = {"n": 5.0, "recall": 80.0, "all_gold": 60.0, "num_chunks": 7.0, "labeler_pairs": 40.0}
    method = _choice(
        {"loop_rerank": {"score": 71.0, "sets": {"musique": row}, "efficientrag": {"top_k": 10}}}
    )
    record = {
        "chosen": "later hops top 6",
        "tolerance": 1.0,
        "candidates": {
            AS_CHOSEN: {"score": 80.0, "pairs": 40.0},
            "later hops top 6": {"score": 79.5, "pairs": 28.0},
        },
    }
    picked = EfficientRAGConfig(top_k=6, first_top_k=10)
    rows = bench.pair_choice_rows(method, picked, record)
    name = "loop_rerank, later hops top 6 (pairs chosen on validation)"
    assert list(rows) == [name] and rows[name]["efficientrag"]["top_k"] == 6
    on_dev = bench.with_dev_rows(method, rows)
    assert list(on_dev["candidates"]) == ["loop_rerank", name] and list(method["candidates"]) == [
        "loop_rerank"
    ]
    assert (
        "**later hops top 6**" in bench.pair_lines(record)[0]
        and "79.50 at 28.0 pairs" in bench.pair_lines(record)[0]
    )
    # The report's choice table lists the candidates the choice scored, not the dev-only rows.
    text = bench.report(
        _args(),
        ["musique"],
        ("k6", []),
        _models(tmp_path),
        ({**method, "pairs": record}, None),
        {},
        1.0,
        COMMAND,
    )
    assert (
        "| **loop_rerank** | 80.0 / 60.0 / 7.00 / 40.0 | 71.00 |" in text and "**later hops top 6**" in text
    )
    kept = {"chosen": AS_CHOSEN, "why": "a one-hop method judges its N pairs"}
    assert bench.pair_choice_rows(method, picked, kept) == {} and "one-hop" in bench.pair_lines(kept)[0]


class _ExitJudge:
    """Validation runs by a fixed table: the reranker keeps its score at every threshold, the loop
    loses its gold past 0.1; a higher threshold lets more of the 3 pairs leave at layer 1 (of 4)."""

    progress = False

    def __init__(self, corpus):
        from types import SimpleNamespace

        self.sets = [
            SimpleNamespace(name="musique", group="validation", retriever=SimpleNamespace(corpus=corpus))
        ]
        self.asked = []

    def records(self, models, cfg):
        t = cfg.exit_threshold
        self.asked.append((cfg.max_hops, t))
        leaving = 0 if t is None else min(3, int(t * 20))
        out = []
        for q in range(12):
            hits = [
                {"id": cid, "tag": 0.9, **({"exited_at": 1} if i < leaving else {})}
                for i, cid in enumerate(["alpha", "bob", "omega"])
            ]
            lost = cfg.max_hops > 1 and t is not None and t > 0.1
            out.append(
                {
                    "id": f"q{q}",
                    "question": f"Who directed film {q}?",
                    "retrieved_ids": ["bob"] if lost else ["alpha"],
                    "gold_chunk_ids": ["alpha"],
                    "trace": {"hops": [{"queries": [f"Who directed film {q}?"], "hits": [hits]}]},
                    "counters": {"labeler_pairs": 3.0, "exited_pairs": float(leaving)},
                }
            )
        return {"musique": out}


def test_each_method_gets_its_own_exit_threshold_over_heads_fit_once_for_the_shipped_method(bench, tmp_path):
    import torch

    from efficientrag.adapt.exit_choice import ExitChoiceConfig
    from efficientrag.data.corpus import Corpus
    from efficientrag.data.schema import Chunk
    from efficientrag.models import Labeler
    from efficientrag.models.early_exit import EARLY_EXIT_DIR
    from efficientrag.testing.tiny_backbones import tiny_deberta
    from efficientrag.testing.token_tasks import labeler_rows, sentences, write_rows
    from efficientrag.training.exit_head import ExitHeadConfig

    backbone = tiny_deberta(tmp_path / "deberta", sentences(300), num_layers=4)
    torch.manual_seed(0)
    folder = Labeler.from_backbone(str(backbone), max_length=64, device="cpu").save_pretrained(
        tmp_path / "lab"
    )
    root = tmp_path / "direction"
    write_rows(root / "train_data" / "labeler", labeler_rows(24, seed=1), labeler_rows(8, seed=2, prefix="v"))
    corpus = Corpus(
        [Chunk(c, c.title(), f"{c} was a film director born in 1950.") for c in ("alpha", "bob", "omega")]
    )
    judge = _ExitJudge(corpus)
    models = {"labeler": Path(folder), "filter": Path(folder)}
    bases = {"labeler_rerank": {"max_hops": 1}, "loop_rerank_calibrated": {"max_hops": 4}}
    cfg = ExitChoiceConfig(
        enabled=True, thresholds=[0.05, 0.1, 0.2], heads=ExitHeadConfig(layers=[1], epochs=2)
    )
    record, rows = bench.choose_exits(cfg, judge, models, root, bases)
    # The heads saw the shipped method's (the last base's) full-depth pairs, and were written once.
    assert judge.asked[0] == (4, None) and (folder / EARLY_EXIT_DIR / "model.safetensors").is_file()
    assert record["methods"]["labeler_rerank"]["chosen"] == 0.2  # fewest layers, score kept at every one
    assert record["methods"]["loop_rerank_calibrated"]["chosen"] == 0.1  # 0.2 loses the gold
    assert list(rows) == ["labeler_rerank, exit < 0.2", "loop_rerank_calibrated, exit < 0.1"]
    assert record["methods"]["loop_rerank_calibrated"]["shown"] == 0.1
    assert rows["loop_rerank_calibrated, exit < 0.1"]["efficientrag"]["exit_threshold"] == 0.1
    assert rows["loop_rerank_calibrated, exit < 0.1"]["efficientrag"]["max_hops"] == 4
    lines = bench.exit_choice_lines(record, 4)
    assert lines[-1] == "| loop_rerank_calibrated | 100.00 (12) | 100.00 (9) | 100.00 (6) | 0.00 (3) | 0.1 |"
    assert lines[-2].startswith("| labeler_rerank | 100.00 (12)") and lines[-2].endswith(
        "| 100.00 (3) | 0.2 |"
    )


def test_the_exit_table_sets_each_exit_row_beside_its_own_full_depth(bench, monkeypatch, tmp_path):
    from types import SimpleNamespace

    def record(q, kept, exited=(), pairs=20.0):
        hits = [
            {"id": c, "tag": 0.5, **({"exited_at": 2} if c in exited else {})} for c in ("a", "b", "c", "d")
        ]
        return {
            "id": f"q{q}",
            "retrieved_ids": kept,
            "gold_chunk_ids": ["a", "b"],
            "trace": {"hops": [{"queries": ["q"], "hits": [hits]}]},
            "counters": {"labeler_pairs": pairs, "exited_pairs": float(len(exited))},
        }

    runs = {
        "labeler_rerank": [record(q, ["a", "b"]) for q in range(4)],
        "labeler_rerank, exit < 0.2": [
            record(q, ["a", "c"] if q == 0 else ["a", "b"], ("b", "d")) for q in range(4)
        ],
        "loop_rerank_calibrated": [record(q, ["a", "b"], pairs=40.0) for q in range(4)],
        "loop_rerank_calibrated, exit < 0.05 (not chosen)": [
            record(q, ["a", "b"], ("c",), pairs=40.0) for q in range(4)
        ],
    }
    method = {
        "candidates": {n: {"efficientrag": {"labeler": str(tmp_path), "max_hops": 1}} for n in runs},
    }
    exits = {
        "methods": {
            "labeler_rerank": {"chosen": 0.2, "shown": 0.2},
            "loop_rerank_calibrated": {"chosen": None, "shown": 0.05},
        }
    }
    monkeypatch.setattr(bench, "evaluate_on_dev", lambda m, r, e, o: runs)
    monkeypatch.setattr(bench, "encoder_depth", lambda folder: 6)
    timed = {}

    def time_loops(settings, search, questions, quantize):
        timed.update(settings=list(settings), questions=questions, quantize=quantize)
        return dict(zip(settings, (0.2, 0.15, 0.3, 0.25), strict=True))

    monkeypatch.setattr(bench, "time_loops", time_loops)
    pool = SimpleNamespace(retriever=None, examples=[SimpleNamespace(question=f"q{i}?") for i in range(5)])
    args = argparse.Namespace(time_sample=3, quantize="bf16")
    lines = bench.exit_section(args, method, exits, pool, tmp_path)
    assert timed == {"settings": list(runs), "questions": ["q0?", "q1?", "q2?"], "quantize": "bf16"}
    table = {line.split(" | ")[0][2:]: line.split(" | ") for line in lines if line.startswith("| ")}
    # Full depth: 4 pairs of 6 layers; the exit: 2 of them leave after layer 2.
    assert table["labeler_rerank"][3:7] == ["24", "", "0.200", "1.00x"]
    exit_row = table["labeler_rerank, exit < 0.2"]
    assert exit_row[2] == "18.0 / 2.0 (18)" and exit_row[3] == "16" and exit_row[4] == "12.5%"
    assert exit_row[5:7] == ["0.150", "0.75x"] and "-12.5" in exit_row[7]
    assert table["loop_rerank_calibrated"][5:7] == ["0.300", "1.50x"]
    # Full depth chosen: the best-scoring exit is still shown beside it, marked.
    shown = table["loop_rerank_calibrated, exit < 0.05 (not chosen)"]
    assert shown[2] == "39.0 / 1.0 (39)" and shown[4] == "0.0%" and shown[5:7] == ["0.250", "1.25x"]
    assert "first 3 questions" in lines[0] and "`bf16`" in lines[0]


def test_the_preset_holds_the_pair_pick_with_its_own_exit(bench, tmp_path):
    from efficientrag.config import load_config
    from efficientrag.pipeline.config import EfficientRAGConfig
    from efficientrag.serve.config import ServeExperimentConfig

    pick = "loop_rerank_calibrated, later hops top 4 (pairs chosen on validation)"
    on_dev = {
        "candidates": {
            "loop_rerank_calibrated": {"efficientrag": {"top_k": 10}},
            pick: {"efficientrag": {"top_k": 4}},
            f"{pick}, exit < 0.1": {"efficientrag": {"top_k": 4, "exit_threshold": 0.1}},
        }
    }
    method = {
        "chosen": "loop_rerank_calibrated",
        "pairs": {"chosen": "later hops top 4"},
        "early_exit": {"methods": {pick: {"chosen": 0.1}, "loop_rerank_calibrated": {"chosen": 0.3}}},
    }
    settings = bench.shipped(method, on_dev)
    assert (settings.top_k, settings.exit_threshold) == (4, 0.1)
    assert bench.shipped({**method, "early_exit": {}}, on_dev).exit_threshold is None
    assert bench.shipped({"chosen": "loop_rerank_calibrated"}, on_dev).top_k == 10
    path = bench.write_preset("bm25", settings, tmp_path / "retrieve.yaml")
    served = load_config(ServeExperimentConfig, path)
    assert served.retriever.kind == "bm25" and served.efficientrag == load_config(
        EfficientRAGConfig, data={"top_k": 4, "exit_threshold": 0.1}
    )


def test_a_method_kept_at_full_depth_still_shows_its_best_exit_marked_not_chosen(bench):
    scored = {None: {"score": 85.2}, 0.02: {"score": 82.3}, 0.05: {"score": 82.3}, 0.1: {"score": 79.0}}
    assert bench.best_exit(scored) == 0.05
    record = {
        "methods": {
            "labeler_rerank": {"chosen": None, "shown": 0.02},
            "loop_rerank_calibrated": {"chosen": 0.1, "shown": 0.1},
        }
    }
    assert bench.exit_rows(record) == {
        "labeler_rerank": ("labeler_rerank", None),
        "labeler_rerank, exit < 0.02 (not chosen)": ("labeler_rerank", 0.02),
        "loop_rerank_calibrated": ("loop_rerank_calibrated", None),
        "loop_rerank_calibrated, exit < 0.1": ("loop_rerank_calibrated", 0.1),
    }

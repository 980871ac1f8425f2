import re
from collections import Counter

import pytest

from efficientrag.data import read_dataset, read_musique
from efficientrag.data.toy_questions import QUESTION_TYPES
from efficientrag.data.toy_world import generate_toy_world, write_toy_world

REF = re.compile(r"#(\d+)")


@pytest.fixture(scope="module")
def world():
    return generate_toy_world(seed=0, num_questions=300)


def _gold_paragraphs(rec):
    by_idx = {p["idx"]: p for p in rec["paragraphs"]}
    order = list(dict.fromkeys(s["paragraph_support_idx"] for s in rec["question_decomposition"]))
    return [by_idx[i] for i in order]


def test_same_seed_gives_byte_identical_files_and_other_seeds_differ(tmp_path):
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    assert write_toy_world(a, seed=7, num_questions=60) == 60
    write_toy_world(b, seed=7, num_questions=60)
    write_toy_world(c, seed=8, num_questions=60)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    first = {r["question"] for r in generate_toy_world(seed=7, num_questions=60)}
    other = {r["question"] for r in generate_toy_world(seed=8, num_questions=60)}
    assert len(first & other) < 10


def test_type_mix_follows_the_weights(world):
    counts = Counter(r["type"] for r in world)
    assert counts == {"bridge": 120, "compositional": 75, "comparison": 75, "bridge_comparison": 30}
    only = generate_toy_world(seed=1, num_questions=20, type_mix={"comparison": 1.0})
    assert {r["type"] for r in only} == {"comparison"}
    with pytest.raises(ValueError, match="unknown toy question type"):
        generate_toy_world(num_questions=5, type_mix={"trivia": 1.0})


def test_record_shape_is_musique_with_unique_ids_and_questions(world):
    assert len({r["id"] for r in world}) == len(world)
    assert len({r["question"] for r in world}) == len(world)
    for rec in world:
        assert rec["answerable"] is True and rec["type"] in QUESTION_TYPES
        assert rec["id"].split("__")[0] == rec["type"]
        assert [p["idx"] for p in rec["paragraphs"]] == list(range(10))
        assert len({p["title"] for p in rec["paragraphs"]}) == 10
        supporting = {p["idx"] for p in rec["paragraphs"] if p["is_supporting"]}
        assert supporting == {s["paragraph_support_idx"] for s in rec["question_decomposition"]}
        for p in rec["paragraphs"]:
            sentences = [s for s in re.split(r"(?<=[.?!])\s+", p["paragraph_text"]) if s]
            assert 2 <= len(sentences) <= 4, p["paragraph_text"]


def test_decomposition_is_consistent(world):
    for rec in world:
        steps = rec["question_decomposition"]
        by_idx = {p["idx"]: p for p in rec["paragraphs"]}
        hops = {"bridge": 2, "compositional": 3, "comparison": 2, "bridge_comparison": 4}[rec["type"]]
        assert len(steps) == hops
        for j, step in enumerate(steps, start=1):
            # every "#k" names an earlier step, and each step's answer is stated in its paragraph
            assert all(1 <= int(k) < j for k in REF.findall(step["question"])), step
            assert step["answer"] in by_idx[step["paragraph_support_idx"]]["paragraph_text"]
        if rec["type"] in ("bridge", "compositional"):
            assert steps[-1]["answer"] == rec["answer"]
            assert REF.search(steps[-1]["question"])
        if rec["type"] == "comparison":
            assert not any(REF.search(s["question"]) for s in steps)
            assert rec["answer"] in {by_idx[s["paragraph_support_idx"]]["title"] for s in steps}


def test_bridge_entities_are_not_in_the_question_but_in_the_hop_paragraph(world):
    checked = 0
    for rec in world:
        steps = rec["question_decomposition"]
        by_idx = {p["idx"]: p for p in rec["paragraphs"]}
        referenced = {int(k) for s in steps for k in REF.findall(s["question"])}
        for k in referenced:
            bridge = steps[k - 1]["answer"]
            assert bridge not in rec["question"], (rec["question"], bridge)
            assert bridge in by_idx[steps[k - 1]["paragraph_support_idx"]]["paragraph_text"]
            checked += 1
        if rec["type"] in ("bridge", "compositional"):
            assert rec["answer"] not in rec["question"]
    assert checked >= 300


def test_answers_are_verbatim_in_the_last_gold_paragraph(world):
    for rec in world:
        gold = _gold_paragraphs(rec)
        if rec["type"] == "bridge_comparison":
            # the answer is a work title: it opens the answer's chain (work, then its creator)
            assert gold[-2]["title"] == rec["answer"]
            assert rec["answer"] in gold[-2]["paragraph_text"]
        else:
            assert rec["answer"] in gold[-1]["paragraph_text"], rec
        for alias in rec["answer_aliases"]:  # "Kingdom of X" for X, "Stem" for "Stem Pictures"
            assert alias != rec["answer"] and (alias in rec["answer"] or rec["answer"] in alias)


def test_comparison_answers_are_right(world):
    for rec in (r for r in world if r["type"] in ("comparison", "bridge_comparison")):
        years = [int(s["answer"]) for s in rec["question_decomposition"] if s["answer"].isdigit()]
        assert len(years) == 2 and years[-1] < years[0]  # the answer's chain comes last and is earlier
        a, b = re.search(r", (.+) or (.+)\?$", rec["question"]).groups()
        assert rec["answer"] in (a, b)


def test_distractors_are_confusable(world):
    confusable = []
    for rec in world:
        gold = [p["title"] for p in rec["paragraphs"] if p["is_supporting"]]
        words = {w for t in gold for w in t.split() if w not in {"The", "the", "of", "and", "After"}}
        confusable.append(
            sum(
                1
                for p in rec["paragraphs"]
                if not p["is_supporting"]
                and (any(g in p["paragraph_text"] for g in gold) or words & set(p["title"].split()))
            )
        )
    assert sum(confusable) / len(confusable) >= 4
    assert sum(c >= 1 for c in confusable) >= 0.95 * len(confusable)


def test_toy_dataset_goes_through_the_musique_reader(tmp_path):
    result = read_dataset("toy", tmp_path / "toy.jsonl", seed=3, num_questions=40)
    again = read_musique(tmp_path / "toy.jsonl", dataset="toy")
    assert [e.to_dict() for e in result.examples] == [e.to_dict() for e in again.examples]
    assert len(result.examples) == 40 and not result.skipped
    ex = result.examples[0]
    assert ex.dataset == "toy" and ex.type == ex.raw["type"]
    supports = [s["paragraph_support_idx"] for s in ex.raw["question_decomposition"]]
    assert ex.gold_chunk_ids == list(dict.fromkeys(f"{ex.id}-{i:02d}" for i in supports))
    unnamed = read_dataset("toy", seed=3, num_questions=40)
    assert unnamed.path == "<toy world seed=3 num_questions=40>"
    assert [e.question for e in unnamed.examples] == [e.question for e in result.examples]


def test_bad_arguments_fail_early():
    with pytest.raises(ValueError, match="paragraphs_per_question"):
        generate_toy_world(num_questions=5, paragraphs_per_question=3)
    with pytest.raises(ValueError, match="num_questions"):
        generate_toy_world(num_questions=0)

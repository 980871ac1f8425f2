"""``efficientrag adapt`` killed with SIGKILL mid-fine-tune, run again: the result equals an
uninterrupted run's (tiny DeBERTa models: under a minute of CPU; ``-m slow``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from safetensors.torch import load_file

from efficientrag.cli import main
from efficientrag.data.toy_world import generate_toy_world
from efficientrag.jsonl import read_jsonl, write_jsonl
from efficientrag.models import Filter, Labeler
from efficientrag.testing.kill_mid_run import kill_when
from efficientrag.testing.tiny_backbones import tiny_deberta
from efficientrag.testing.token_tasks import filter_rows, labeler_rows, sentences, write_rows

SETTINGS = [
    "pseudo.max_questions=20",
    "labeler_train.max_steps=16",
    "labeler_train.batch_size=8",
    "labeler_train.max_length=64",
    "labeler_train.save_steps=1",
    "labeler_train.learning_rate=0.003",
    "filter_train.max_steps=4",
    "filter_train.batch_size=8",
    "filter_train.max_length=64",
    "filter_train.save_steps=1",
    "mix.labeler_ratio=0.5",
    "progress=false",
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("adapt-inputs")
    records = generate_toy_world(seed=3, num_questions=30)
    seen: dict[str, dict[str, str]] = {}
    for rec in records:
        for p in rec["paragraphs"]:
            seen.setdefault(
                p["title"], {"id": f"c{len(seen)}", "title": p["title"], "text": p["paragraph_text"]}
            )
    write_jsonl(root / "corpus.jsonl", seen.values())
    backbone = tiny_deberta(root / "deberta", sentences(300) + [c["text"] for c in seen.values()])
    Labeler.from_backbone(str(backbone), max_length=64, device="cpu").save_pretrained(root / "labeler")
    Filter.from_backbone(str(backbone), max_length=64, device="cpu").save_pretrained(root / "filter")
    write_rows(root / "train" / "labeler", labeler_rows(48, seed=1), labeler_rows(12, seed=2, prefix="v"))
    write_rows(root / "train" / "filter", filter_rows(24, seed=1), filter_rows(8, seed=2, prefix="v"))
    return root


def _args(inputs: Path, work: Path) -> list[str]:
    return [
        "adapt",
        "--corpus",
        str(inputs / "corpus.jsonl"),
        "--labeler",
        str(inputs / "labeler"),
        "--filter",
        str(inputs / "filter"),
        "--train-data",
        str(inputs / "train"),
        "--work-dir",
        str(work),
        *SETTINGS,
    ]


def _step(work: Path) -> int:
    for state in work.glob("corpus-*/labeler/checkpoints/last/trainer_state.json"):
        try:
            return int(json.loads(state.read_text())["global_step"])
        except (json.JSONDecodeError, KeyError, OSError):
            return 0
    return 0


@pytest.mark.numerics
@pytest.mark.slow  # ~40 s of CPU: three adapt runs, one of them a subprocess
def test_adapt_killed_mid_fine_tune_resumes_to_the_uninterrupted_result(inputs, tmp_path, repo_root):
    work = tmp_path / "killed"
    cmd = [sys.executable, "-m", "efficientrag.cli", *_args(inputs, work)]
    killed_at, output = kill_when(cmd, repo_root, lambda: _step(work), at=5, timeout=300)
    assert killed_at is not None and killed_at >= 5, (
        f"adapt never reached a labeler checkpoint:\n{output[-3000:]}"
    )
    assert not (work / "adapt.json").exists()

    assert main(_args(inputs, work)) == 0
    ref = tmp_path / "reference"
    assert main(_args(inputs, ref)) == 0

    done, reference = (json.loads((w / "adapt.json").read_text()) for w in (work, ref))
    assert done["inputs"] == reference["inputs"]
    # The same stage folders (fingerprints of the same inputs), rows and mixes byte for byte.
    # (the adapted models: the tiny random ones may score under the given ones, which are then kept)
    done["labeler"], done["filter"] = done["adapted"]["labeler"], done["adapted"]["filter"]
    reference["labeler"], reference["filter"] = (
        reference["adapted"]["labeler"],
        reference["adapted"]["filter"],
    )
    assert Path(done["labeler"]).relative_to(work) == Path(reference["labeler"]).relative_to(ref)
    pseudo = next(work.glob("pseudo-*"))
    assert pseudo.name == next(ref.glob("pseudo-*")).name
    for part in ("labeler/train.jsonl", "filter/train.jsonl", "pseudo_validation.jsonl"):
        assert (pseudo / part).read_bytes() == (ref / pseudo.name / part).read_bytes()
    stage = Path(done["labeler"]).parents[1]
    for part in ("train_data/labeler/train.jsonl", "train_data/filter/train.jsonl"):
        assert (stage / part).read_bytes() == (ref / stage.name / part).read_bytes()
    # The resumed fine-tune saw the same batches in the same order, and ends with the same weights.
    logs = [list(read_jsonl(w / stage.name / "labeler" / "train_log.jsonl")) for w in (work, ref)]
    assert [r["step"] for r in logs[0]] == list(range(1, 17))
    assert [r["batch_hash"] for r in logs[0]] == [r["batch_hash"] for r in logs[1]]
    for kind in ("labeler", "filter"):
        a = load_file(Path(done[kind]) / "model.safetensors")
        b = load_file(Path(reference[kind]) / "model.safetensors")
        assert max(float((a[k] - b[k]).abs().max()) for k in a) < 1e-4
    # A third run finds everything done and changes nothing.
    before = (Path(done["labeler"]) / "model.safetensors").stat().st_mtime_ns
    assert main(_args(inputs, work)) == 0
    assert (Path(done["labeler"]) / "model.safetensors").stat().st_mtime_ns == before
    # ... and still reports what the stages cost when they were made, not the instant of reuse.
    again = json.loads((work / "adapt.json").read_text())
    assert set(again["timings_s"]) == {"pseudo_rows", "finetune_corpus"}
    for stage, seconds in done["timings_s"].items():
        assert again["timings_s"][stage] >= seconds > 0


def test_adapt_refuses_missing_inputs_with_one_line(inputs, tmp_path, capsys):
    args = _args(inputs, tmp_path / "w")
    bad = [a if a != str(inputs / "train") else str(tmp_path / "nowhere") for a in args]
    assert main(bad) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "nowhere" in err and "labeler/train.jsonl" in err and "\n" not in err
    assert main(["adapt", "--corpus", str(inputs / "corpus.jsonl")]) == 2
    assert "adapt needs labeler, filter, train_data" in capsys.readouterr().err


def test_adapt_self_trains_from_questions_with_the_links_agreeing(inputs, tmp_path):
    """Option 2 alone through the CLI: decisions recorded per question over the corpus, cut with its
    links, one fine-tune; a rerun reuses every stage, and another cut reuses the decisions."""
    toy = generate_toy_world(seed=3, num_questions=30)[:8]
    questions = tmp_path / "log.jsonl"
    write_jsonl(questions, ({"id": r["id"], "question": r["question"]} for r in toy))
    work = tmp_path / "self"
    # Random tiny models are unsure of everything (p near 0.5): every pair counts as confident, so
    # the links alone decide which pairs are kept as Continue and which are contradicted.
    args = _args(inputs, work) + [
        "--questions",
        str(questions),
        "from_corpus=false",
        "self_train.continue_threshold=0.01",
        "self_train.terminate_threshold=0.0",
        "self_train.min_continue_rows=1",
    ]
    assert main([*args, "self_train.agreement=links"]) == 0
    done = json.loads((work / "adapt.json").read_text())
    # The pseudo rows are mined for their validation questions (the comparison's), not trained on.
    assert set(done["timings_s"]) == {"pseudo_rows", "self_decisions_1", "finetune_self_1", "method_choice"}
    assert "corpus" not in done["stages"]
    decisions = Path(done["stages"]["self1"]["decisions"])
    assert [d["id"] for d in read_jsonl(decisions)] == [r["id"] for r in toy]
    links = done["stages"]["self1"]["rows"]
    assert links["questions"] == 8 and links["continue_rows"] > 0 and links["contradicted_rows"] > 0
    # Backed and contradicted pairs are disjoint parts of the (all confident) pairs.
    assert links["continue_rows"] + links["contradicted_rows"] <= links["labeler_pairs"]
    adapted = Path(done["adapted"]["labeler"])
    assert adapted.is_relative_to(work) and (adapted / "model.safetensors").is_file()
    before = (adapted / "model.safetensors").stat().st_mtime_ns
    assert main([*args, "self_train.agreement=links"]) == 0
    assert (adapted / "model.safetensors").stat().st_mtime_ns == before

    # Confidence alone, on the same decisions: every pair is a Continue row, none contradicted.
    stamp = decisions.stat().st_mtime_ns
    assert main([*args, "self_train.agreement=none"]) == 0
    alone = json.loads((work / "adapt.json").read_text())
    assert Path(alone["stages"]["self1"]["decisions"]) == decisions and decisions.stat().st_mtime_ns == stamp
    rows = alone["stages"]["self1"]["rows"]
    assert rows["continue_rows"] == rows["labeler_pairs"] and "contradicted_rows" not in rows
    assert len(list(decisions.parent.glob("rows-*"))) == 2
    assert alone["adapted"]["labeler"] != done["adapted"]["labeler"]

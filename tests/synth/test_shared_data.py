"""The annotation teacher on the real dataset samples (skipped where ../shared/data is absent)."""

import json
import runpy

import pytest

from efficientrag.config import load_config
from efficientrag.synth.config import SynthConfig
from efficientrag.synth.pipeline import run_synthesis

# Every reason a run on real data may legitimately drop a record; anything else is a bug.
KNOWN_REASONS = {
    "bridge order ambiguous",
    "dependency answer not labeled",
    "answer not in chunk",
    "no negative in top-k",
    "dependency unavailable",
    "dependency rejected",
}

CASES = {
    "musique": ("musique.yaml", []),
    "2wikimultihopqa": ("2wikimultihopqa.yaml", []),
    "hotpotqa_distractor": ("hotpotqa.yaml", []),
    "hotpotqa_ircot": ("hotpotqa.yaml", ["data.path=../shared/data/hotpotqa/dev_ircot.350.jsonl"]),
}


def synth(repo_root, shared_data, tmp_path, preset, overrides, limit):
    """Run a preset; its ``../shared/data`` paths (relative to the checkout) point at the fixture's folder."""

    def here(path):
        return path.replace("../shared/data", str(shared_data)) if path else path

    cfg = load_config(SynthConfig, repo_root / "configs" / "synth" / preset, [here(o) for o in overrides])
    for source in (cfg.data, *cfg.data.extra):
        source.path = here(source.path)
        source.limit = limit
    cfg.out_dir = str(tmp_path)
    cfg.progress = False
    return run_synthesis(cfg)


@pytest.mark.parametrize("case", list(CASES))
def test_annotation_teacher_on_a_slice_of_real_data(repo_root, shared_data, tmp_path, case):
    preset, overrides = CASES[case]
    stats = synth(repo_root, shared_data, tmp_path, preset, overrides, limit=30)
    (name, s), *_ = stats["datasets"].items()
    questions = s["questions"]
    assert questions["complete"] >= 0.75 * questions["selected"]
    # One positive per sub-question that got a next-hop query, plus its question when that differs.
    labeler_rows = [
        json.loads(line)
        for split in ("train", "validation")
        for line in (tmp_path / "labeler" / f"{split}.jsonl").read_text().splitlines()
    ]
    n_qpos = sum(r["id"].endswith("/qpos") for r in labeler_rows)
    assert n_qpos <= s["sub_questions"]["next_hop"]
    assert s["labeler"]["tags"]["continue"] == s["sub_questions"]["next_hop"] + n_qpos
    assert s["filter"]["rows"] >= 0.8 * s["sub_questions"]["dependent"]
    assert 0.01 < s["labeler"]["positive_label_share"] < 0.3
    assert s["filter_align_rate"].get("min", 1.0) >= 0.8
    reasons = {r for stage in s["rejects"].values() for r in stage}
    assert reasons <= KNOWN_REASONS, reasons
    # Chunks and labels agree with the corpus the readers pooled.
    row = json.loads((tmp_path / "labeler" / "train.jsonl").read_text().splitlines()[0])
    assert len(row["labels"]) == len(row["chunk_words"]) and row["tag"] in {"continue", "terminate"}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_annotation_teacher_on_all_shared_samples(repo_root, shared_data, tmp_path, case):
    preset, overrides = CASES[case]
    stats = synth(repo_root, shared_data, tmp_path, preset, overrides, limit=None)
    (name, s), *_ = stats["datasets"].items()
    assert s["questions"]["complete"] >= 0.85 * s["questions"]["selected"]


def test_entry_script_runs_the_toy_preset(repo_root, tmp_path, capsys):
    main = runpy.run_path(str(repo_root / "synth" / "run.py"), run_name="synth_run")["main"]
    preset = str(repo_root / "configs" / "synth" / "toy.yaml")
    assert main(["--config", preset, "--limit", "20", f"out_dir={tmp_path}", "progress=false"]) == 0
    out = capsys.readouterr().out
    summary = json.loads(out[out.index("{") :])
    assert summary["datasets"]["toy"]["labeler"] > 0
    assert (tmp_path / "labeler" / "train.jsonl").is_file()
    assert json.loads((tmp_path / "stats.json").read_text())["questions"] == 20
    assert main(["--config", preset, "min_align_rat=1"]) == 2
    assert "did you mean 'min_align_rate'" in capsys.readouterr().err

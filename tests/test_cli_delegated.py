"""``efficientrag synth`` and ``efficientrag train`` run the same entries as the scripts."""

import json

from efficientrag.cli import main


def test_cli_synth_runs_the_synthesis_entry(tmp_path, repo_root, capsys, monkeypatch):
    monkeypatch.chdir(repo_root)
    out = tmp_path / "synth"
    code = main(
        ["synth", "--config", "configs/synth/toy.yaml", "--limit", "12", f"out_dir={out}", "progress=false"]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["out_dir"] == str(out)
    rows = printed["datasets"]["toy"]
    assert rows["labeler"] > 0 and rows["labeler"] == sum(
        1 for part in ("train", "validation") for _ in (out / "labeler" / f"{part}.jsonl").open()
    )


def test_cli_synth_reports_a_bad_key(tmp_path, repo_root, capsys, monkeypatch):
    monkeypatch.chdir(repo_root)
    assert main(["synth", "--config", "configs/synth/toy.yaml", "no_such_key=1"]) == 2
    assert "no_such_key" in capsys.readouterr().err


def test_cli_train_needs_a_model_kind(capsys):
    assert main(["train"]) == 2
    assert main(["train", "tagger"]) == 2
    assert "labeler,filter" in capsys.readouterr().out


def test_cli_train_reports_a_bad_preset(tmp_path, repo_root, capsys):
    code = main(["train", "filter", "--config", str(repo_root / "configs/labeler/minilm-cpu.yaml")])
    assert code == 2
    assert "not a 'filter'" in capsys.readouterr().err

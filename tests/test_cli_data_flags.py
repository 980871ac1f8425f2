"""`--dataset`, `--data` and `--corpus` win over a preset's data section in every command, and a
user's own corpus gets a work folder no other file shares (issue 39, items 2 and 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from efficientrag.cli import main
from efficientrag.cli.command_config import command_overrides, experiment_config
from efficientrag.cli.parser import build_parser
from efficientrag.config import load_config, parse_args_with_overrides
from efficientrag.errors import ConfigError
from efficientrag.experiment.prepared_data import default_work_dir
from efficientrag.quickstart.job import QuickstartConfig

REPO = Path(__file__).resolve().parents[1]
TOY = str(REPO / "configs/experiments/toy.yaml")
MILVUS = str(REPO / "configs/experiments/hotpotqa-milvus.yaml")
HOTPOT = str(REPO / "configs/experiments/hotpotqa.yaml")

CHUNKS = [
    {"id": "alpha", "title": "Alpha Film", "text": "Alpha Film was directed by Bob Stone."},
    {"id": "bob", "title": "Bob Stone", "text": "Bob Stone was born in Lisbon."},
    {"id": "omega", "title": "Omega", "text": "Omega is a city on the coast."},
]
QUESTION = {
    "id": "q1",
    "question": "Where was the director of Alpha Film born?",
    "answer": "Lisbon",
    "gold_ids": ["alpha", "bob"],
}


def _write(path: Path, rows: list[dict]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _readme_milvus_preset(tmp_path: Path) -> str:
    """The README's Milvus YAML: a retriever section and no data section."""
    path = tmp_path / "milvus.yaml"
    path.write_text(
        "retriever: {kind: milvus, milvus: {uri: runs/my.db, search: hybrid}}\n", encoding="utf-8"
    )
    return str(path)


def _cfg(argv: list[str]):
    return experiment_config(parse_args_with_overrides(build_parser(), argv))


@pytest.mark.parametrize("command", ["corpus", "index", "retrieve"])
@pytest.mark.parametrize("preset", ["toy", "milvus", "readme-milvus"])
def test_corpus_flag_wins_over_the_preset_in_every_command(tmp_path, command, preset):
    preset_path = {"toy": TOY, "milvus": MILVUS}.get(preset) or _readme_milvus_preset(tmp_path)
    corpus = _write(tmp_path / "mine" / "corpus.jsonl", CHUNKS)
    extra = ["-q", "why?"] if command == "retrieve" else []
    cfg = _cfg([command, "-c", preset_path, "--corpus", corpus, *extra])
    assert (cfg.data.dataset, cfg.data.corpus_path, cfg.data.path, cfg.data.extra) == (
        "jsonl",
        corpus,
        None,
        [],
    )
    assert cfg.work_dir == default_work_dir(corpus)


@pytest.mark.parametrize("preset", ["toy", "milvus"])
def test_eval_takes_questions_and_corpus_over_any_preset(tmp_path, preset):
    corpus = _write(tmp_path / "corpus.jsonl", CHUNKS)
    questions = _write(tmp_path / "questions.jsonl", [QUESTION])
    cfg = _cfg(
        ["eval", "-c", {"toy": TOY, "milvus": MILVUS}[preset], "--data", questions, "--corpus", corpus]
    )
    assert (cfg.data.dataset, cfg.data.path, cfg.data.corpus_path) == ("jsonl", questions, corpus)
    assert cfg.work_dir == default_work_dir(corpus)


def test_data_flag_keeps_the_presets_dataset_and_leaves_its_folder(tmp_path):
    dev = str(tmp_path / "my_hotpot_dev.json")
    cfg = _cfg(["eval", "-c", HOTPOT, "--data", dev])
    assert (cfg.data.dataset, cfg.data.path) == ("hotpotqa", dev)
    assert cfg.work_dir == default_work_dir(dev) != load_config(type(cfg), HOTPOT).work_dir


def test_named_work_dir_and_key_value_overrides_still_win(tmp_path):
    corpus = _write(tmp_path / "corpus.jsonl", CHUNKS)
    assert _cfg(["index", "-c", TOY, "--corpus", corpus, "--work-dir", "runs/a"]).work_dir == "runs/a"
    assert _cfg(["index", "-c", TOY, "--corpus", corpus, "work_dir=runs/b"]).work_dir == "runs/b"
    assert (
        _cfg(["index", "--corpus", corpus, "data.corpus_path=other.jsonl"]).data.corpus_path == "other.jsonl"
    )


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["index", "-c", TOY, "--data", "q.jsonl"], "--data q.jsonl needs --dataset"),
        (["index", "--dataset", "toy", "--corpus", "c.jsonl"], "--corpus cannot be used with the toy world"),
        (["eval", "-c", TOY, "--corpus", "c.jsonl"], "this command needs questions"),
        (["eval", "-c", MILVUS, "--dataset", "jsonl", "--corpus", "c.jsonl"], "this command needs questions"),
    ],
)
def test_combinations_that_mean_nothing_are_one_line(argv, says, capsys):
    with pytest.raises(ConfigError, match=says):
        _cfg(argv)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and says in err and "\n" not in err


def test_quickstart_takes_the_data_flags_over_its_preset(tmp_path):
    corpus = _write(tmp_path / "corpus.jsonl", CHUNKS)
    questions = _write(tmp_path / "questions.jsonl", [QUESTION])
    preset = str(REPO / "configs/quickstart/hotpotqa.yaml")
    argv = ["quickstart", "-c", preset, "--dataset", "jsonl", "--data", questions, "--corpus", corpus]
    args = parse_args_with_overrides(build_parser(), argv)
    cfg = load_config(QuickstartConfig, args.config, command_overrides(args, QuickstartConfig))
    assert (cfg.data.dataset, cfg.data.path, cfg.data.corpus_path) == ("jsonl", questions, corpus)
    assert cfg.work_dir == default_work_dir(corpus)  # never the toy quickstart's runs/quickstart
    bare = parse_args_with_overrides(build_parser(), ["quickstart", "-c", preset, "--corpus", corpus])
    with pytest.raises(ConfigError, match="this command needs questions"):
        command_overrides(bare, QuickstartConfig)


def test_index_with_a_preset_and_corpus_indexes_that_corpus(tmp_path, monkeypatch, capsys):
    """The bug: `-c PRESET --corpus my.jsonl` indexed and evaluated the toy world under runs/toy."""
    corpus = _write(tmp_path / "corpus.jsonl", CHUNKS)
    questions = _write(tmp_path / "questions.jsonl", [QUESTION])
    monkeypatch.chdir(tmp_path)
    assert main(["index", "-c", TOY, "--corpus", corpus, "retriever.kind=bm25"]) == 0
    assert "(3 chunks)" in capsys.readouterr().out
    code = main(["eval", "-c", TOY, "--data", questions, "--corpus", corpus, "--method", "direct_r",
                 "retriever.kind=bm25", "eval.ks=[2]"])  # fmt: skip
    assert code == 0
    summary = json.loads((tmp_path / default_work_dir(corpus) / "eval/direct_r/summary.json").read_text())
    assert summary["n"] == 1 and summary["dataset"] == "jsonl"
    assert not (tmp_path / "runs" / "toy").exists()


def test_same_named_corpora_get_folders_of_their_own(tmp_path, monkeypatch):
    first = _write(tmp_path / "a" / "corpus.jsonl", CHUNKS)
    second = _write(tmp_path / "b" / "corpus.jsonl", CHUNKS[:2])
    monkeypatch.chdir(tmp_path)
    for corpus in (first, second):
        assert main(["index", "--corpus", corpus, "retriever.kind=bm25"]) == 0
    folders = [tmp_path / default_work_dir(c) for c in (first, second)]
    assert folders[0] != folders[1] and all(f.name.startswith("corpus-") for f in folders)
    counts = [len((f / "data" / "corpus.jsonl").read_text().splitlines()) for f in folders]
    assert counts == [3, 2]


def test_a_shared_work_dir_is_refused_before_anything_is_overwritten(tmp_path, monkeypatch, capsys):
    first = _write(tmp_path / "a" / "corpus.jsonl", CHUNKS)
    second = _write(tmp_path / "b" / "corpus.jsonl", CHUNKS[:2])
    monkeypatch.chdir(tmp_path)
    shared = ["--work-dir", "runs/shared", "retriever.kind=bm25"]
    assert main(["index", "--corpus", first, *shared]) == 0
    data = tmp_path / "runs/shared/data"
    before = {p.name: p.read_bytes() for p in data.iterdir()}
    index_meta = (tmp_path / "runs/shared/index/bm25/meta.json").read_bytes()
    capsys.readouterr()
    assert main(["index", "--corpus", second, *shared]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: runs/shared holds the data") and "\n" not in err
    assert first in err and second in err and f"--work-dir {default_work_dir(second)}" in err
    assert "--rebuild" not in err
    assert {p.name: p.read_bytes() for p in data.iterdir()} == before
    assert (tmp_path / "runs/shared/index/bm25/meta.json").read_bytes() == index_meta


def test_the_same_corpus_moved_or_edited_keeps_its_folder_usable(tmp_path, monkeypatch):
    first = _write(tmp_path / "a" / "corpus.jsonl", CHUNKS)
    moved = _write(tmp_path / "b" / "corpus.jsonl", CHUNKS)  # same content, another path
    monkeypatch.chdir(tmp_path)
    shared = ["--work-dir", "runs/shared", "retriever.kind=bm25"]
    assert main(["corpus", "--corpus", first, *shared]) == 0
    assert main(["corpus", "--corpus", moved, *shared]) == 0
    _write(Path(moved), [*CHUNKS, {"id": "new", "title": "New", "text": "A new chunk."}])  # edited in place
    assert main(["corpus", "--corpus", moved, *shared]) == 0
    assert len((tmp_path / "runs/shared/data/corpus.jsonl").read_text().splitlines()) == 4


def test_serve_takes_the_data_flags_over_its_preset(tmp_path):
    from efficientrag.serve.config import ServeExperimentConfig

    corpus = _write(tmp_path / "corpus.jsonl", CHUNKS)
    for preset in (TOY, MILVUS, _readme_milvus_preset(tmp_path)):
        argv = ["serve", "-c", preset, "--corpus", corpus, "--labeler", "L", "--filter", "F"]
        args = parse_args_with_overrides(build_parser(), argv)
        cfg = load_config(ServeExperimentConfig, args.config, command_overrides(args, ServeExperimentConfig))
        assert (cfg.data.dataset, cfg.data.corpus_path, cfg.data.path) == ("jsonl", corpus, None)
        assert cfg.work_dir == default_work_dir(corpus)

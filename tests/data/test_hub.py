"""Hub-layout datasets (saved locally, no hub) read into the same examples as the original files."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest
from datasets import Dataset, DatasetDict

from efficientrag.data import (
    DataConfig,
    DataFormatError,
    HubUnavailableError,
    load_data,
    read_2wiki,
    read_dataset,
    read_hotpotqa,
    read_musique,
)
from efficientrag.data.readers.hub import hub_repo
from efficientrag.errors import ConfigError


def _save(rows: list[dict], folder: Path, split: str = "validation") -> Path:
    DatasetDict({split: Dataset.from_list(rows)}).save_to_disk(str(folder))
    return folder


def _columns(pairs: list[list], names: tuple[str, str]) -> dict[str, list]:
    return {names[0]: [p[0] for p in pairs], names[1]: [p[1] for p in pairs]}


def hotpot_hub_row(rec: dict) -> dict:
    """The ``hotpotqa/hotpot_qa`` (distractor) layout: ``id``, column-wise context and facts."""
    return {
        "id": rec["_id"],
        "question": rec["question"],
        "answer": rec["answer"],
        "type": rec["type"],
        "level": rec.get("level") or "",
        "supporting_facts": _columns(rec["supporting_facts"], ("title", "sent_id")),
        "context": _columns(rec["context"], ("title", "sentences")),
    }


def twowiki_hub_row(rec: dict) -> dict:
    """A 2Wiki Hub mirror's layout: column-wise context with ``content``, column-wise evidences."""
    evidences = rec.get("evidences") or []
    return {
        "_id": rec["_id"],
        "type": rec["type"],
        "question": rec["question"],
        "context": _columns(rec["context"], ("title", "content")),
        "supporting_facts": _columns(rec["supporting_facts"], ("title", "sent_id")),
        "evidences": {
            "fact": [e[0] for e in evidences],
            "relation": [e[1] for e in evidences],
            "entity": [e[2] for e in evidences],
        },
        "answer": rec["answer"],
    }


def _same_examples(a, b) -> None:
    assert [e.id for e in a.examples] == [e.id for e in b.examples]
    for x, y in zip(a.examples, b.examples, strict=True):
        assert (x.question, x.answers, x.gold_chunk_ids, x.type, x.context_ids) == (
            y.question,
            y.answers,
            y.gold_chunk_ids,
            y.type,
            y.context_ids,
        )
    assert [(c.id, c.title, c.text) for c in a.chunks] == [(c.id, c.title, c.text) for c in b.chunks]
    assert len(a.skipped) == len(b.skipped)


INLINE_HOTPOT = {
    "_id": "h1",
    "question": "Which city was the birthplace of the author of Moon Song?",
    "answer": "Lyra",
    "type": "bridge",
    "level": "hard",
    "supporting_facts": [["Ann Vo", 0], ["Moon Song", 1]],
    "context": [
        ["Moon Song", ["Moon Song is a novel.", " It was written by Ann Vo."]],
        ["Sun Song", ["Sun Song is a film."]],
        ["Ann Vo", ["Ann Vo is a writer.", " She was born in Lyra."]],
    ],
}


def test_hotpotqa_hub_layout_maps_onto_the_original_records(tmp_path):
    original = tmp_path / "hotpot.json"
    original.write_text(json.dumps([INLINE_HOTPOT]))
    saved = _save([hotpot_hub_row(INLINE_HOTPOT)], tmp_path / "saved")
    from_hub = read_dataset("hotpotqa", saved)
    _same_examples(from_hub, read_hotpotqa(original))
    assert from_hub.examples[0].gold_chunk_ids == ["h1-02", "h1-00"]  # supporting-fact order
    assert from_hub.path == f"{saved}[validation]"
    pooled = load_data(DataConfig(dataset="hotpot", path=str(saved)))
    assert [e.id for e in pooled.examples] == ["h1"]
    with pytest.raises(DataFormatError, match="no 'train' split"):
        load_data(DataConfig(dataset="hotpotqa", path=str(saved), split="train"))
    with pytest.raises(ConfigError, match="distractor, not ircot"):
        load_data(DataConfig(dataset="hotpotqa", path=str(saved), format="ircot"))


def test_real_hotpotqa_2wiki_and_musique_records_read_the_same_from_a_hub_layout(shared_data, tmp_path):
    hotpot = shared_data / "hotpotqa" / "hotpot_dev_distractor_v1.first100.json"
    rows = [hotpot_hub_row(r) for r in json.loads(hotpot.read_text())]
    _same_examples(read_dataset("hotpotqa", _save(rows, tmp_path / "h")), read_hotpotqa(hotpot))

    twowiki = shared_data / "2wikimultihopqa" / "dev.350.json"
    rows = [twowiki_hub_row(r) for r in json.loads(twowiki.read_text())[:60]]
    from_hub = read_dataset("2wiki", _save(rows, tmp_path / "w"))
    _same_examples(from_hub, read_2wiki(twowiki, limit=60))
    assert from_hub.examples[0].raw["evidences"] == json.loads(twowiki.read_text())[0]["evidences"]

    musique = shared_data / "musique" / "musique_ans_v1.0_dev.70.jsonl"
    rows = [json.loads(line) for line in musique.read_text().splitlines() if line.strip()]
    _same_examples(
        read_dataset("musique", _save(rows, tmp_path / "m", "train"), split="train"), read_musique(musique)
    )


def test_offline_hub_names_fail_with_the_file_hint_before_any_network_call(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("load_dataset must not be called offline")

    monkeypatch.setattr(datasets, "load_dataset", no_network)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        HubUnavailableError, match=r"musique: loading hub:dgslibisey/MuSiQue .*musique_ans_v1\.0_dev"
    ):
        read_dataset("musique", "hub")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(HubUnavailableError, match="pass the path of the downloaded file"):
        load_data(DataConfig(dataset="hotpotqa", path="hub:someone/hotpot_copy"))


def test_hub_names_pick_repository_config_and_split_and_unreachable_hubs_get_the_hint(monkeypatch):
    calls = []

    def unreachable(*args, **kwargs):
        calls.append((args, kwargs))
        raise ConnectionError("Couldn't reach the Hub")

    monkeypatch.setattr(datasets, "load_dataset", unreachable)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "0")
    with pytest.raises(HubUnavailableError, match=r"Couldn't reach the Hub.*hotpot_dev_distractor_v1\.json"):
        load_data(DataConfig(dataset="hotpotqa", path="hub", split="train"))
    assert calls == [(("hotpotqa/hotpot_qa", "distractor"), {"split": "train"})]
    assert hub_repo("2wikimultihopqa", "hub:me/2wiki:dev_only") == ("me/2wiki", "dev_only")
    with pytest.raises(ValueError, match="empty Hub dataset name"):
        hub_repo("musique", "hub:")
    with pytest.raises(ConfigError, match="path=hub"):
        load_data(DataConfig(dataset="musique"))


def test_a_saved_single_dataset_is_any_split_to_read_but_only_train_to_train_on(tmp_path):
    from efficientrag.data.readers.hub import load_saved_split
    from efficientrag.training import training_set

    Dataset.from_list([{"a": 1}, {"a": 2}]).save_to_disk(str(tmp_path / "one"))
    assert len(load_saved_split(tmp_path / "one", "validation")) == 2
    assert len(training_set.load_saved_split(tmp_path / "one", "train")) == 2
    with pytest.raises(DataFormatError, match="single Dataset; it has no 'validation' split"):
        training_set.load_saved_split(tmp_path / "one", "validation")

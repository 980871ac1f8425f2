"""TreeHop's training script prepares the pools; the training loop takes the pools it is given."""

from __future__ import annotations

import pytest

from efficientrag.data.config import DataConfig, ToyWorldConfig
from efficientrag.errors import ConfigError
from efficientrag.experiment.pools import open_pools
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.treehop.config import TreeHopTrainConfig
from efficientrag.treehop.training import train_treehop


def test_training_without_pools_names_where_they_come_from(tmp_path):
    cfg = TreeHopTrainConfig(work_dir=str(tmp_path / "work"), output_dir=str(tmp_path / "model"))
    with pytest.raises(ConfigError, match=r"needs pools=.*efficientrag\.experiment\.pools\.open_pools"):
        train_treehop(cfg)
    assert not (tmp_path / "model").exists()


def test_script_pools_each_training_file_into_its_own_indexed_corpus(tmp_path, minilm_path):
    sets = [DataConfig(toy=ToyWorldConfig(num_questions=6, seed=s)) for s in (1, 2)]
    cfg = TreeHopTrainConfig(
        train_sets=sets,
        retriever=RetrieverConfig(kind="dense", encoder=minilm_path),
        work_dir=str(tmp_path / "work"),
        progress=False,
    )
    pools = open_pools(cfg.train_sets, cfg.retriever, cfg.work_dir, progress=False)
    assert [p.name for p in pools] == ["0-toy", "1-toy"]
    for pool in pools:
        assert len(pool.examples) == 6
        assert len(pool.retriever.search(["who"], 1)[0]) == 1
        folder = tmp_path / "work" / "pools" / pool.name
        assert (folder / "data" / "corpus.jsonl").is_file() and any((folder / "index").iterdir())
    # A second run reads the prepared data and the saved index back.
    again = open_pools(cfg.train_sets, cfg.retriever, cfg.work_dir, progress=False)
    assert [len(p.corpus) for p in again] == [len(p.corpus) for p in pools]

"""Dense retrieval with the real all-MiniLM-L6-v2 over a small handmade corpus."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pytest

from efficientrag.config import load_config
from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk
from efficientrag.errors import ConfigError
from efficientrag.retrieval import (
    DenseRetriever,
    Encoder,
    IndexMismatchError,
    IndexNotFoundError,
    Retriever,
    RetrieverConfig,
    build_retriever,
    load_retriever,
)
from efficientrag.retrieval.dense import encode_vector
from efficientrag.retrieval.embedding_store import EmbeddingStore, StoreSpec

TOPICS = [
    ("Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris."),
    (
        "Photosynthesis",
        "Photosynthesis lets green plants convert light energy into chemical energy stored as glucose.",
    ),
    (
        "Great Barrier Reef",
        "The Great Barrier Reef off Queensland is the largest coral reef system in the world.",
    ),
    (
        "Mount Everest",
        "Mount Everest, on the border of Nepal and China, is Earth's highest mountain above sea level.",
    ),
    (
        "Penicillin",
        "Alexander Fleming discovered penicillin in 1928 after a mould killed bacteria in a culture dish.",
    ),
    ("Python", "Python is a programming language created by Guido van Rossum and first released in 1991."),
    (
        "Mona Lisa",
        "The Mona Lisa is a half-length portrait painted by Leonardo da Vinci, kept in the Louvre.",
    ),
    ("Amazon River", "The Amazon River in South America carries more water than any other river on Earth."),
    ("Apollo 11", "Apollo 11 landed Neil Armstrong and Buzz Aldrin on the lunar surface in July 1969."),
    ("Honeybee", "Honeybees perform a waggle dance to tell hive mates the direction of flowers."),
    ("Pompeii", "The eruption of Vesuvius in AD 79 buried the Roman town of Pompeii under volcanic ash."),
    (
        "Beethoven",
        "Beethoven continued to compose, including his Ninth Symphony, after he became almost totally deaf.",
    ),
    (
        "Great Wall",
        "The Great Wall of China is a series of fortifications built across the northern borders of China.",
    ),
    ("Sahara", "The Sahara is the largest hot desert, covering much of North Africa."),
    ("Tour de France", "The Tour de France is a multi-stage bicycle race held mainly in France every July."),
    ("Deep Blue", "In 1997 IBM's Deep Blue computer beat the reigning world chess champion Garry Kasparov."),
    (
        "Black hole",
        "A black hole is a region of spacetime whose gravity is so strong that not even light escapes.",
    ),
    (
        "Emperor penguin",
        "Emperor penguins breed during the Antarctic winter, the males incubating the eggs on their feet.",
    ),
    ("Coffee", "Coffee plants are thought to have been first cultivated in Ethiopia and Yemen."),
    ("Titanic", "RMS Titanic sank in April 1912 after striking an iceberg during her maiden voyage."),
    (
        "DNA",
        "Watson and Crick proposed the double-helix structure of DNA in 1953 using Rosalind Franklin's data.",
    ),
    (
        "Marathon",
        "The marathon commemorates the legend of a Greek messenger running from Marathon to Athens.",
    ),
    ("Sushi", "Sushi is a Japanese dish of vinegared rice served with raw fish and vegetables."),
    ("Printing press", "Johannes Gutenberg introduced movable-type printing to Europe around 1440 in Mainz."),
    ("Curiosity rover", "NASA's Curiosity rover has been exploring Gale crater on Mars since 2012."),
    ("Volleyball", "Volleyball was invented in 1895 by William G. Morgan in Holyoke, Massachusetts."),
    (
        "Aurora",
        "Auroras are light displays in polar skies caused by the solar wind hitting the magnetosphere.",
    ),
    (
        "Smallpox vaccine",
        "Edward Jenner developed the smallpox vaccine in 1796 by inoculating people with cowpox.",
    ),
    (
        "Tulip mania",
        "During the Dutch tulip mania of the 1630s, single tulip bulbs sold for extraordinary prices.",
    ),
    (
        "Bitcoin",
        "Bitcoin is a cryptocurrency whose blockchain ledger was described by Satoshi Nakamoto in 2008.",
    ),
]

# Paraphrases that share few words with their chunk.
QUERIES = {
    "Which famous landmark of the French capital is made of iron?": "t00",
    "How do plants turn sunlight into sugar?": "t01",
    "What is the tallest peak on the planet?": "t03",
    "Who found the first antibiotic thanks to a fungus?": "t04",
    "the first men to walk on the moon": "t08",
    "Which Roman city was destroyed by a volcano?": "t10",
    "Which composer kept writing music after losing his hearing?": "t11",
    "machine that defeated the best human chess player": "t15",
    "Which ship went down after hitting ice on its first trip?": "t19",
    "Who brought movable metal type to European books?": "t23",
    "Who made the first vaccine against smallpox?": "t27",
    "digital currency invented by an anonymous creator": "t29",
}
SHARD = 7  # 30 chunks -> shards of 7, 7, 7, 7, 2


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus(Chunk(f"t{i:02d}", title, text) for i, (title, text) in enumerate(TOPICS))


@pytest.fixture(scope="module")
def encoder(minilm_path: str) -> Encoder:
    return Encoder(minilm_path, batch_size=8, show_progress=False)


@pytest.fixture(scope="module")
def cfg() -> RetrieverConfig:
    return RetrieverConfig(shard_size=SHARD, batch_size=8)


@pytest.fixture(scope="module")
def flat_dir(tmp_path_factory, corpus, encoder, cfg) -> Path:
    index_dir = tmp_path_factory.mktemp("flat")
    DenseRetriever.build(corpus, cfg, index_dir, encoder=encoder, show_progress=False)
    return index_dir


@pytest.fixture(scope="module")
def flat(flat_dir, corpus, encoder, cfg) -> DenseRetriever:
    return DenseRetriever.load(flat_dir, corpus, cfg, encoder=encoder)


@pytest.fixture(scope="module")
def memory(corpus, encoder, cfg) -> DenseRetriever:
    return DenseRetriever.build(corpus, cfg, encoder=encoder, show_progress=False)


def copy_index(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def edit_meta(index_dir: Path, **changes: Any) -> None:
    path = index_dir / "meta.json"
    meta = json.loads(path.read_text())
    meta.update(changes)
    path.write_text(json.dumps(meta))


def shard_matrix(index_dir: Path) -> np.ndarray:
    shards = sorted((index_dir / "embeddings").glob("shard_*.npy"))
    return np.concatenate([np.load(p, allow_pickle=False) for p in shards])


class CountingEncoder:
    """Delegates to a real encoder, counting passages; can fail like a killed run after N calls."""

    def __init__(self, inner: Encoder, fail_after_calls: int | None = None) -> None:
        self.inner = inner
        self.fail_after_calls = fail_after_calls
        self.calls = 0
        self.passages = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def encode_passages(self, texts, **kwargs):
        if self.fail_after_calls is not None and self.calls >= self.fail_after_calls:
            raise KeyboardInterrupt("simulated kill")
        self.calls += 1
        self.passages += len(texts)
        return self.inner.encode_passages(texts, **kwargs)


# --- ranking ----------------------------------------------------------------------------------


def test_paraphrased_queries_rank_their_chunk_first(flat):
    assert isinstance(flat, Retriever)
    hits = flat.search(list(QUERIES), 3)
    top1 = {q: hs[0].id for q, hs in zip(QUERIES, hits, strict=True)}
    assert top1 == QUERIES
    for hs in hits:
        scores = [h.score for h in hs]
        assert scores == sorted(scores, reverse=True)
        assert len({h.id for h in hs}) == 3


def test_scores_are_cosines_for_normalized_minilm(flat, encoder, corpus):
    hit = flat.search(["tallest mountain"], 1)[0][0]
    q = encoder.encode_queries(["tallest mountain"])[0]
    p = encoder.encode_passages([hit.chunk.contents])[0]
    assert hit.score == pytest.approx(float(q @ p), abs=1e-5)
    assert np.linalg.norm(q) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(
    ("index_type", "extra", "faiss_cls"),
    [
        ("ivf", {"ivf_nlist": 4, "ivf_nprobe": 2}, faiss.IndexIVFFlat),
        ("hnsw", {"hnsw_m": 8, "hnsw_ef_search": 16}, faiss.IndexHNSWFlat),
    ],
)
def test_approximate_indexes_find_the_relevant_chunk(
    tmp_path, flat_dir, corpus, encoder, cfg, index_type, extra, faiss_cls
):
    other = RetrieverConfig(shard_size=SHARD, batch_size=8, index_type=index_type, **extra)
    counting = CountingEncoder(encoder)
    index_dir = copy_index(flat_dir, tmp_path / index_type)
    # Saved embeddings that match are reused: switching the index type re-encodes nothing.
    retriever = build_retriever(other, corpus, index_dir, rebuild=True, encoder=counting, show_progress=False)
    assert counting.passages == 0
    assert isinstance(retriever.index, faiss_cls)
    hits = retriever.search(list(QUERIES), 3)
    for (query, gold), hs in zip(QUERIES.items(), hits, strict=True):
        assert gold in [h.id for h in hs], query
    meta = json.loads((index_dir / "meta.json").read_text())
    assert meta["index_type"] == index_type
    if index_type == "ivf":
        assert meta["index_params"] == {"nlist": 4, "train_size": len(corpus)}
        assert retriever.index.nprobe == 2
    else:
        assert meta["index_params"]["m"] == 8
        assert retriever.index.hnsw.efSearch == 16
    reloaded = load_retriever(other, corpus, index_dir, encoder=encoder)
    assert [[h.id for h in hs] for hs in reloaded.search(list(QUERIES), 3)] == [
        [h.id for h in hs] for hs in hits
    ]


def test_ivf_clamps_list_count_to_training_rows(tmp_path, flat_dir, corpus, encoder):
    cfg = RetrieverConfig(index_type="ivf", ivf_nlist=1000, ivf_nprobe=1000, shard_size=SHARD)
    index_dir = copy_index(flat_dir, tmp_path / "idx")
    retriever = build_retriever(cfg, corpus, index_dir, rebuild=True, encoder=encoder, show_progress=False)
    assert retriever.index.nlist == len(corpus)
    assert retriever.meta["index_params"]["nlist"] == len(corpus)
    assert retriever.search(["tallest peak"], 1)[0][0].id == "t03"


@pytest.mark.numerics
def test_batch_search_equals_one_by_one(flat):
    queries = list(QUERIES)
    batched = flat.search(queries, 5)
    for query, hs in zip(queries, batched, strict=True):
        single = flat.search([query], 5)[0]
        assert [h.id for h in single] == [h.id for h in hs]
        np.testing.assert_allclose([h.score for h in single], [h.score for h in hs], atol=1e-5)


def test_in_memory_build_matches_saved_index(memory, flat):
    queries = list(QUERIES)[:4]
    a, b = memory.search(queries, 4), flat.search(queries, 4)
    assert [[h.id for h in hs] for hs in a] == [[h.id for h in hs] for hs in b]


def test_empty_queries_get_no_hits_without_breaking_the_batch(flat, corpus):
    hits = flat.search(["", "   ", "tallest peak on the planet", "\n"], 2)
    assert hits[0] == [] and hits[1] == [] and hits[3] == []
    assert hits[2][0].id == "t03"
    assert flat.search([], 5) == []
    assert flat.search(["anything"], 0) == [[]]
    assert len(flat.search(["anything"], 1000)[0]) == len(corpus)
    with pytest.raises(TypeError, match="list of queries"):
        flat.search("tallest peak", 3)
    with pytest.raises(ValueError, match="k must be"):
        flat.search(["x"], -1)


# --- persistence and checks -------------------------------------------------------------------


def test_save_load_round_trip_gives_identical_hits(tmp_path, memory, corpus, encoder, cfg):
    memory.save(tmp_path / "saved")
    loaded = DenseRetriever.load(tmp_path / "saved", corpus, cfg, encoder=encoder)
    queries = list(QUERIES)
    for a, b in zip(memory.search(queries, 6), loaded.search(queries, 6), strict=True):
        assert [h.id for h in a] == [h.id for h in b]
        assert [h.score for h in a] == [h.score for h in b]


def test_saved_files_are_json_npy_and_faiss_only(flat_dir, corpus):
    meta = json.loads((flat_dir / "meta.json").read_text())
    assert meta["kind"] == "dense"
    assert meta["encoder"] == "sentence-transformers/all-MiniLM-L6-v2"  # the packaged folder's hub name
    assert (meta["dim"], meta["normalize"], meta["pooling"], meta["metric"]) == (
        384,
        True,
        "mean",
        "inner_product",
    )
    assert meta["corpus_fingerprint"] == corpus.fingerprint()
    assert meta["corpus_size"] == 30
    assert json.loads((flat_dir / "ids.json").read_text()) == corpus.ids
    files = {p.relative_to(flat_dir).as_posix() for p in flat_dir.rglob("*") if p.is_file()}
    assert files == {
        "meta.json",
        "ids.json",
        "index.faiss",
        "embeddings/manifest.json",
        *(f"embeddings/shard_{i:05d}.npy" for i in range(5)),
    }


def test_other_encoder_in_meta_is_refused(tmp_path, flat_dir, corpus, encoder, cfg):
    index_dir = copy_index(flat_dir, tmp_path / "idx")
    edit_meta(index_dir, encoder="facebook/contriever-msmarco")
    with pytest.raises(IndexMismatchError) as err:
        DenseRetriever.load(index_dir, corpus, cfg, encoder=encoder)
    assert err.value.field == "encoder"
    msg = str(err.value)
    assert "facebook/contriever-msmarco" in msg and "all-MiniLM-L6-v2" in msg and "--rebuild" in msg


def test_other_corpus_is_refused(flat_dir, corpus, encoder, cfg):
    changed = Corpus([*corpus.chunks[:-1], Chunk("t29", "Bitcoin", "Bitcoin is a cryptocurrency.")])
    with pytest.raises(IndexMismatchError) as err:
        DenseRetriever.load(flat_dir, changed, cfg, encoder=encoder)
    assert err.value.field == "corpus_fingerprint"
    assert err.value.saved == corpus.fingerprint() and err.value.requested == changed.fingerprint()
    with pytest.raises(IndexMismatchError) as err:
        DenseRetriever.load(flat_dir, Corpus(corpus.chunks[:10]), cfg, encoder=encoder)
    assert err.value.field == "corpus_size"


def test_other_normalization_is_refused(tmp_path, flat_dir, corpus, encoder, cfg):
    index_dir = copy_index(flat_dir, tmp_path / "idx")
    edit_meta(index_dir, normalize=False)
    with pytest.raises(IndexMismatchError) as err:
        DenseRetriever.load(index_dir, corpus, cfg, encoder=encoder)
    assert (err.value.field, err.value.saved, err.value.requested) == ("normalize", False, True)


def test_other_weights_under_the_same_name_are_refused(tmp_path, flat_dir, corpus, encoder, cfg):
    index_dir = copy_index(flat_dir, tmp_path / "idx")
    edit_meta(index_dir, encoder_probe=encode_vector(np.random.default_rng(0).normal(size=384)))
    with pytest.raises(IndexMismatchError) as err:
        DenseRetriever.load(index_dir, corpus, cfg, encoder=encoder)
    assert err.value.field == "encoder weights"


def test_other_index_type_is_refused(flat_dir, corpus, encoder):
    with pytest.raises(IndexMismatchError) as err:
        DenseRetriever.load(flat_dir, corpus, RetrieverConfig(index_type="hnsw"), encoder=encoder)
    assert err.value.field == "index_type"


def test_missing_index_is_reported(tmp_path, corpus, encoder, cfg):
    with pytest.raises(IndexNotFoundError, match="meta.json is missing"):
        load_retriever(cfg, corpus, tmp_path / "nowhere", encoder=encoder)
    with pytest.raises(ValueError, match="index_dir"):
        load_retriever(cfg, corpus)


# --- resume -----------------------------------------------------------------------------------


def test_killed_indexing_resumes_from_the_last_complete_shard(tmp_path, flat_dir, corpus, encoder, cfg):
    index_dir = tmp_path / "idx"
    crashing = CountingEncoder(encoder, fail_after_calls=2)
    with pytest.raises(KeyboardInterrupt):
        DenseRetriever.build(corpus, cfg, index_dir, encoder=crashing, show_progress=False)
    emb_dir = index_dir / "embeddings"
    assert sorted(p.name for p in emb_dir.glob("shard_*.npy")) == ["shard_00000.npy", "shard_00001.npy"]
    assert json.loads((emb_dir / "manifest.json").read_text())["shards_done"] == 2
    with pytest.raises(IndexNotFoundError, match="interrupted build"):
        DenseRetriever.load(index_dir, corpus, cfg, encoder=encoder)
    finished = {p.name: p.stat().st_mtime_ns for p in emb_dir.glob("shard_*.npy")}
    (emb_dir / "shard_00002.npy.tmp").write_bytes(b"torn write")  # a kill in the middle of np.save

    resumed = CountingEncoder(encoder)
    retriever = build_retriever(cfg, corpus, index_dir, encoder=resumed, show_progress=False)
    assert resumed.passages == len(corpus) - 2 * SHARD
    assert {p: (emb_dir / p).stat().st_mtime_ns for p in finished} == finished
    assert not list(emb_dir.glob("*.tmp"))
    np.testing.assert_allclose(shard_matrix(index_dir), shard_matrix(flat_dir), rtol=0, atol=1e-6)
    assert retriever.search(["tallest peak on the planet"], 1)[0][0].id == "t03"


def test_a_damaged_shard_is_encoded_again(tmp_path, flat_dir, corpus, encoder, cfg):
    index_dir = copy_index(flat_dir, tmp_path / "idx")
    (index_dir / "meta.json").unlink()
    np.save(index_dir / "embeddings" / "shard_00003.npy", np.zeros((3, 384), dtype=np.float32))
    counting = CountingEncoder(encoder)
    DenseRetriever.build(corpus, cfg, index_dir, encoder=counting, show_progress=False)
    assert counting.passages == SHARD
    np.testing.assert_allclose(shard_matrix(index_dir), shard_matrix(flat_dir), rtol=0, atol=1e-6)


def test_embeddings_of_another_setup_are_not_mixed_in(tmp_path, corpus, encoder):
    small = Corpus(corpus.chunks[:5])
    index_dir = tmp_path / "idx"
    with pytest.raises(KeyboardInterrupt):
        DenseRetriever.build(
            small,
            RetrieverConfig(shard_size=2),
            index_dir,
            encoder=CountingEncoder(encoder, 1),
            show_progress=False,
        )
    other = RetrieverConfig(shard_size=3)
    with pytest.raises(IndexMismatchError) as err:
        DenseRetriever.build(small, other, index_dir, encoder=encoder, show_progress=False)
    assert (err.value.field, err.value.saved, err.value.requested) == ("shard_size", 2, 3)
    assert "rebuild" in str(err.value)
    counting = CountingEncoder(encoder)
    build_retriever(other, small, index_dir, rebuild=True, encoder=counting, show_progress=False)
    assert counting.passages == len(small)
    assert sorted(p.name for p in (index_dir / "embeddings").glob("shard_*.npy")) == [
        "shard_00000.npy",
        "shard_00001.npy",
    ]


def test_store_gathers_rows_across_shards(flat_dir, corpus, encoder):
    spec = StoreSpec.for_corpus(encoder, corpus, SHARD)
    store = EmbeddingStore.open(flat_dir / "embeddings", spec)
    assert store.missing_shards() == []
    rows = np.array([29, 0, 8, 7, 14])
    np.testing.assert_array_equal(store.gather(rows), shard_matrix(flat_dir)[rows])


# --- factory ----------------------------------------------------------------------------------


def test_build_retriever_loads_an_existing_index_instead_of_encoding(
    flat_dir, tmp_path, corpus, encoder, cfg
):
    index_dir = copy_index(flat_dir, tmp_path / "idx")
    counting = CountingEncoder(encoder)
    retriever = build_retriever(cfg, corpus, index_dir, encoder=counting, show_progress=False)
    assert counting.passages == 0
    assert retriever.search(["Who made the first vaccine against smallpox?"], 1)[0][0].id == "t27"
    with pytest.raises(IndexMismatchError):
        build_retriever(RetrieverConfig(index_type="hnsw"), corpus, index_dir, encoder=encoder)


def test_drop_embeddings_after_indexing(tmp_path, flat_dir, corpus, encoder):
    copy_index(flat_dir, tmp_path / "idx")
    cfg = RetrieverConfig(shard_size=SHARD, keep_embeddings=False, index_dir=str(tmp_path / "idx"))
    retriever = build_retriever(cfg, corpus, rebuild=True, encoder=encoder, show_progress=False)
    assert not (tmp_path / "idx" / "embeddings").exists()
    assert (tmp_path / "idx" / "index.faiss").is_file()
    assert retriever.search(["tallest peak on the planet"], 1)[0][0].id == "t03"


# --- config -----------------------------------------------------------------------------------


def test_config_loads_from_yaml_and_overrides(tmp_path):
    preset = tmp_path / "retriever.yaml"
    preset.write_text("encoder: facebook/contriever-msmarco\nindex_type: hnsw\nhnsw_m: 16\n")
    cfg = load_config(RetrieverConfig, preset, ["normalize=false", "shard_size=500"])
    assert (cfg.encoder, cfg.index_type, cfg.hnsw_m, cfg.normalize, cfg.shard_size) == (
        "facebook/contriever-msmarco",
        "hnsw",
        16,
        False,
        500,
    )
    assert load_config(RetrieverConfig).normalize is None
    with pytest.raises(ConfigError, match="index_type"):
        load_config(RetrieverConfig, overrides=["index_type=annoy"])
    with pytest.raises(ConfigError, match="shard_size"):
        load_config(RetrieverConfig, overrides=["shard_size=0"])


def test_search_reports_encode_and_search_time(flat):
    flat.search(["a question about anything", "another one"], 3)
    assert set(flat.last_timings) == {"encode", "search"}
    assert flat.last_timings["encode"] > 0 and flat.last_timings["search"] >= 0

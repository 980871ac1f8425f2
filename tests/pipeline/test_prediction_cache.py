"""The prediction cache returns exactly what the model would, and asks the model only once."""

from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.pipeline.prediction_cache import CachedPredictor
from efficientrag.testing.scripted_models import ALPHA_QUESTION as Q1
from efficientrag.testing.scripted_models import (
    STOPWORDS,
    USEFUL_WORDS,
    InfoOnlyFilter,
    ScriptedLabeler,
    bridge_corpus,
)
from efficientrag.testing.word_overlap import WordOverlapRetriever


def test_cached_loop_gives_the_same_results_and_skips_repeated_pairs():
    corpus = bridge_corpus()
    retriever = WordOverlapRetriever(corpus, STOPWORDS)
    plain = EfficientRAG(
        retriever, ScriptedLabeler(USEFUL_WORDS), InfoOnlyFilter(), EfficientRAGConfig(top_k=3)
    )
    inner = ScriptedLabeler(USEFUL_WORDS)
    lab, fil = CachedPredictor(inner), CachedPredictor(InfoOnlyFilter())
    for top_k in (3, 3, 2):  # the same setting twice, then another one
        cfg = EfficientRAGConfig(top_k=top_k)
        cached = EfficientRAG(retriever, lab, fil, cfg).retrieve(Q1)
        ref = EfficientRAG(retriever, plain.labeler, plain.filter, cfg).retrieve(Q1)
        assert cached.chunk_ids == ref.chunk_ids and cached.scores == ref.scores
        assert [h.next_queries for h in cached.trace] == [h.next_queries for h in ref.trace]
    asked = [pair for call in inner.calls for pair in call]
    assert len(asked) == len({(tuple(q), tuple(c)) for q, c in asked}), "a pair reached the model twice"
    assert lab.hits > 0 and lab.misses == len(asked)


def test_a_different_max_length_is_a_different_entry():
    lab = CachedPredictor(ScriptedLabeler(USEFUL_WORDS))
    pair = (["Alpha", "?"], ["Alpha", "is", "a", "film", "by", "Bob", "Stone"])
    lab.predict([pair], max_length=16)
    lab.predict([pair, pair], max_length=16, batch_size=4)  # batch size does not change a prediction
    lab.predict([pair], max_length=32)
    assert (lab.misses, lab.hits) == (2, 2)
    assert len(lab.model.calls) == 2 and lab.useful == USEFUL_WORDS  # attributes pass through

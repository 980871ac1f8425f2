import pytest

from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk
from efficientrag.retrieval.base import Hit
from efficientrag.synth.negatives import R_NO_NEGATIVE, choose_negatives
from efficientrag.synth.records import Reject
from efficientrag.synth.steps import negatives_step
from efficientrag.testing.word_overlap import WordOverlapRetriever


def hits(*texts):
    return [Hit(Chunk(f"c{i}", "", t), 10.0 - i) for i, t in enumerate(texts)]


HITS = hits("gold one", "says Paris here", "plain a", "gold two", "plain b", "plain c")


def test_first_negative_skips_gold_and_answer_bearing_chunks():
    [choice] = choose_negatives(HITS, {"c0", "c3"}, ["Paris"])
    assert (choice.hit.id, choice.rank, choice.skipped_gold, choice.skipped_answer) == ("c2", 3, 1, 1)
    assert choose_negatives(HITS, {"c0"}, ["Paris"], exclude_answer=False)[0].hit.id == "c1"


def test_several_negatives_follow_the_ranking():
    chosen = choose_negatives(HITS, {"c0", "c3"}, ["Paris"], n=3)
    assert [(c.hit.id, c.rank) for c in chosen] == [("c2", 3), ("c4", 5), ("c5", 6)]
    assert chosen[1].skipped_gold == 2
    # Fewer available than asked: what there is.
    assert [c.hit.id for c in choose_negatives(HITS[:3], {"c0"}, ["Paris"], n=5)] == ["c2"]
    with pytest.raises(Reject) as err:
        choose_negatives(HITS[:2], {"c0"}, ["Paris"], n=2)
    assert err.value.reason == R_NO_NEGATIVE
    with pytest.raises(ValueError):
        choose_negatives(HITS, set(), [], n=0)


def test_negatives_step_keeps_the_official_fields_and_adds_the_rest():
    corpus = Corpus(
        [Chunk("g", "G", "alpha beta gamma"), Chunk("n1", "N1", "alpha beta"), Chunk("n2", "N2", "alpha")]
    )
    item = {
        "id": "q#1",
        "question_id": "q",
        "idx": 1,
        "query": "alpha beta gamma",
        "answers": [],
        "gold": ["g"],
    }
    one = negatives_step(WordOverlapRetriever(corpus, []), top_k=3)([item])[0]
    assert one["negative_chunk_id"] == "n1" and "more_negatives" not in one
    two = negatives_step(WordOverlapRetriever(corpus, []), top_k=3, per_query=2)([item])[0]
    assert two["negative_chunk_id"] == "n1"
    assert [m["negative_chunk_id"] for m in two["more_negatives"]] == ["n2"]
    assert two["more_negatives"][0]["negative_rank"] == 3

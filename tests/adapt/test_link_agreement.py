"""Self-training with ``agreement: links``: the corpus's title links back or contradict the models'
confident decisions, on a hand-built corpus whose links are known."""

from __future__ import annotations

import pytest

from efficientrag.adapt.link_agreement import LinkView
from efficientrag.adapt.self_training import SelfTrainConfig, rows_from_decisions
from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk
from efficientrag.jsonl import write_jsonl
from efficientrag.text.words import split_words

CORPUS = Corpus(
    [
        Chunk("film", "Kiss and Tell (1945 film)", "Kiss and Tell is a 1945 comedy starring Shirley Temple."),
        Chunk("actor", "Shirley Temple", "Shirley Temple was named ambassador to Ghana in 1974."),
        Chunk("ghana", "Ghana", "Ghana is a country in West Africa."),
        # Shares a word with the question, named by no chunk on the chain.
        Chunk("other", "Tell Me More", "Tell Me More is a radio show hosted by Michel Martin."),
        Chunk("lonely", "Quiet Harbor", "Quiet Harbor is a village with no famous residents."),
    ]
)
QUESTION = "Which country was the star of Kiss and Tell named ambassador to?"


def _words(cid: str) -> list[str]:
    return split_words(CORPUS.get(cid).contents)


def _pair(cid: str, p: float, query: str = QUESTION) -> dict:
    words = _words(cid)
    return {"query": split_words(query), "chunk": words, "p": p, "words": [0.0] * len(words)}


@pytest.fixture(scope="module")
def view() -> LinkView:
    return LinkView.of_corpus(CORPUS, progress=False)


def test_titles_named_in_a_question_and_links_both_ways(view):
    assert view.named_in(QUESTION) == {"film"}  # "Kiss and Tell" is the film's short title
    assert view.named_in("Where is Quiet Harbour?") == set()  # not the title's words
    assert view.neighbours["film"] == {"actor"} and view.neighbours["actor"] == {"film", "ghana"}
    assert view.neighbours["lonely"] == set()


def test_links_grow_from_the_question_to_a_fixpoint_and_contradict_the_rest(view):
    chunks = [_words(c) for c in ("ghana", "actor", "film", "other", "lonely")]
    verdict = view.judge(QUESTION, chunks, [True, True, True, True, False])
    # film (named) -> actor (linked from film) -> ghana (linked from actor), whatever their order.
    assert verdict.backed == {0, 1, 2}
    # "other" was confident but is on no link from the question; "lonely" was not confident.
    assert verdict.contradicted == {3}
    # The film's chunk names the actor: that mention is the bridge to label.
    film = _words("film")
    assert [film[s:e] for s, e in verdict.bridge_spans[2]] == [["Shirley", "Temple"]]
    actor = _words("actor")
    assert [actor[s:e] for s, e in verdict.bridge_spans[1]] == [["Ghana"]]
    # A chunk that is linked but was not confident is not backed, and stops the growth there.
    verdict = view.judge(QUESTION, chunks, [True, False, True, True, False])
    assert verdict.backed == {2} and verdict.contradicted == {0, 3}


def test_without_a_footing_nothing_is_backed_or_contradicted(view):
    chunks = [_words(c) for c in ("film", "other")]
    verdict = view.judge("Who hosted the radio show about news?", chunks, [True, True])
    assert verdict.backed == set() and verdict.contradicted == set()
    # A chunk that is not in the corpus (edited since) is never backed.
    verdict = view.judge(QUESTION, [["Kiss", "and", "Tell", "?"]], [True])
    assert verdict.backed == set()


def test_links_agreement_turns_decisions_into_backed_and_contradicted_rows(tmp_path, view):
    path = tmp_path / "decisions.jsonl"
    pairs = [_pair("film", 0.9), _pair("other", 0.95), _pair("actor", 0.4), _pair("lonely", 0.01)]
    pairs[0]["words"][0] = 0.8  # the Labeler's own useful word ("Kiss") stays labeled
    write_jsonl(path, [{"id": "q1", "question": QUESTION, "labeler": pairs, "filter": []}])
    base = {"continue_threshold": 0.35, "terminate_threshold": 0.02, "validation_ratio": 0.0}
    labeler, _, counts = rows_from_decisions(path, SelfTrainConfig(**base, agreement="links"), view)
    rows = {(r["tag"], r["chunk_words"][0]): r for r in labeler["train"]}
    assert set(rows) == {
        ("continue", "Kiss"),
        ("continue", "Shirley"),
        ("terminate", "Tell"),  # confident, contradicted by the links
        ("terminate", "Quiet"),  # confident Terminate
    }
    film = rows[("continue", "Kiss")]
    labeled = [w for w, x in zip(film["chunk_words"], film["labels"], strict=True) if x]
    assert labeled == ["Kiss", "Shirley", "Temple"]
    assert counts["contradicted_rows"] == 1 and counts["continue_rows"] == 2
    # Confidence alone keeps the wrong chunk as Continue and labels no bridge.
    labeler, _, counts = rows_from_decisions(path, SelfTrainConfig(**base, agreement="none"), view)
    tags = {(r["tag"], r["chunk_words"][0]) for r in labeler["train"]}
    assert ("continue", "Tell") in tags and "contradicted_rows" not in counts
    with pytest.raises(ValueError, match="LinkView"):
        rows_from_decisions(path, SelfTrainConfig(**base, agreement="links"))
    with pytest.raises(ValueError, match="agreement"):
        SelfTrainConfig(agreement="votes")

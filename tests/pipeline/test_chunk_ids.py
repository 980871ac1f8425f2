"""One id names one chunk across every search of a question: a search that returns a second text
under an id it returned before (at another hop, or in another branch) is refused with one line
naming both, never merged into the first."""

from __future__ import annotations

import pytest

from efficientrag.data.schema import Chunk
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import ChunkIdConflictError, EfficientRAG
from efficientrag.retrieval.base import Hit
from efficientrag.testing.scripted_models import ALPHA_QUESTION, InfoOnlyFilter, ScriptedLabeler
from efficientrag.testing.scripted_models import USEFUL_WORDS as USEFUL

ALPHA = Chunk("alpha", "Alpha", "Alpha is a film directed by Bob Stone.")
BOB = Chunk("bob", "Bob", "Bob Stone was born in Paris.")


class FixedSearch:
    """Each query's hits, fixed; the second hop's query ("Bob Stone") gets ``second``."""

    def __init__(self, second: list[Chunk]) -> None:
        self.second = second

    def search(self, queries, k):
        return [[Hit(c, 1.0) for c in ([ALPHA] if q == ALPHA_QUESTION else self.second)][:k] for q in queries]


def loop(second: list[Chunk]) -> EfficientRAG:
    return EfficientRAG(
        FixedSearch(second),
        ScriptedLabeler(USEFUL),
        InfoOnlyFilter(),
        EfficientRAGConfig(top_k=3, max_hops=3),
    )


def test_a_second_text_under_a_known_id_at_a_later_hop_is_refused_naming_both():
    other = Chunk("alpha", "Bob", "Bob Stone was born in Paris.")  # the bob chunk, stored under alpha's id
    with pytest.raises(ChunkIdConflictError) as caught:
        loop([other, BOB]).retrieve(ALPHA_QUESTION)
    message = str(caught.value)
    assert (
        "'alpha'" in message and "Alpha: Alpha is a film" in message and "Bob: Bob Stone was born" in message
    )
    assert len(message.splitlines()) == 1


def test_the_same_chunk_found_again_is_not_a_conflict():
    res = loop([ALPHA, BOB]).retrieve(ALPHA_QUESTION)
    assert res.chunk_ids == ["alpha", "bob"]

"""Scripted stand-ins for the Labeler and Filter, and the small bridge world they are scripted for.

Tests of anything built on the retrieval loop (the loop itself, adapters, reports) need hop-by-hop
behaviour they can predict exactly; trained models cannot give that, and random ones say nothing.
The world: two films, each directed by a person born in a city; "Where was the director of Alpha
film born?" needs the Alpha chunk (which names Bob Stone) and then the Bob chunk. With
``WordOverlapRetriever(bridge_corpus(), STOPWORDS)`` the question alone already retrieves the Bob
chunk at ``top_k >= 3``, where the Labeler must reject it until the next-hop query names Bob.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG, RetrievalResult

STOPWORDS = ("the", "of", "is", "was", "a", "in", "by", "where", "what", "who", "which")
# Per chunk title, the words the Labeler marks useful: the next hop's entity.
USEFUL_WORDS: dict[str, list[str]] = {
    "Alpha": ["Bob", "Stone"],
    "Bob": ["Paris"],
    "Omega": ["Carla", "Moss"],
    "Carla": ["Lyon"],
}
ALPHA_QUESTION = "Where was the director of Alpha film born?"
OMEGA_QUESTION = "Where was the director of Omega film born?"


def bridge_corpus() -> Corpus:
    return Corpus(
        [
            Chunk("alpha", "Alpha", "Alpha is a film directed by Bob Stone."),
            Chunk("bob", "Bob", "Bob Stone was born in Paris."),
            Chunk("paris", "Paris", "Paris lies in Franconia."),
            Chunk("omega", "Omega", "Omega is a film directed by Carla Moss."),
            Chunk("carla", "Carla", "Carla Moss was born in Lyon."),
            Chunk("noise", "Noise", "Noise film noise."),
        ]
    )


@dataclass
class ScriptedPrediction:
    continue_prob: float
    word_probs: list[float]


class ScriptedLabeler:
    """Continue iff the chunk's title is in ``useful`` and the query names it; labels the scripted
    words of that chunk.

    ``confidence`` sets the continue probability per title (default 1.0), so callers can tell the
    Labeler's score apart from the retriever's; ``rejected`` sets it per title for the chunks it
    rejects (default 0.0; keep them below the tag threshold), so a chunk budget that ranks rejected
    chunks has an order to follow. Every call is kept in ``calls`` to count batches.
    """

    def __init__(
        self,
        useful: Mapping[str, Sequence[str]],
        confidence: Mapping[str, float] | None = None,
        rejected: Mapping[str, float] | None = None,
    ):
        self.useful = dict(useful)
        self.confidence = dict(confidence or {})
        self.rejected = dict(rejected or {})
        self.calls: list[list[tuple[list[str], list[str]]]] = []

    def predict(self, pairs: Sequence[tuple[list[str], list[str]]], **kw: Any) -> list[ScriptedPrediction]:
        self.calls.append(list(pairs))
        out = []
        for query_words, chunk_words in pairs:
            title = chunk_words[0]
            keep = set(self.useful.get(title, []))
            cont = title in self.useful and title in query_words
            prob = self.confidence.get(title, 1.0) if cont else self.rejected.get(title, 0.0)
            out.append(ScriptedPrediction(prob, [1.0 if w in keep else 0.0 for w in chunk_words]))
        return out


class InfoOnlyFilter:
    """Keeps only the Info words: the next query is the newly found entity."""

    def __init__(self) -> None:
        self.calls: list[list[list[str]]] = []

    def predict(self, word_lists: Sequence[list[str]], **kw: Any) -> list[ScriptedPrediction]:
        self.calls.append([list(w) for w in word_lists])
        out = []
        for words in word_lists:
            probs, in_info = [], False
            for i, w in enumerate(words):
                if w == "Info" and i + 1 < len(words) and words[i + 1] == ":":
                    in_info = True
                    probs.append(0.0)
                    continue
                probs.append(1.0 if in_info and w not in {":", ";"} else 0.0)
            out.append(ScriptedPrediction(0.0, probs))
        return out


# Continue probabilities distinct from 1.0 and from any word-overlap score, so a test that reads
# a score from the wrong source fails.
CONFIDENCE = {"Alpha": 0.9, "Bob": 0.7, "Omega": 0.8, "Carla": 0.6, "Paris": 0.55}


def scripted_rag(
    useful: Mapping[str, Sequence[str]] = USEFUL_WORDS, labeler: Any = None, **config: Any
) -> EfficientRAG:
    """The retrieval loop over the bridge world with the scripted models (top-k 3, 4 hops unless
    ``config`` says otherwise), the fixture every adapter test starts from."""
    from efficientrag.testing.word_overlap import WordOverlapRetriever

    return EfficientRAG(
        WordOverlapRetriever(bridge_corpus(), STOPWORDS),
        labeler or ScriptedLabeler(useful, CONFIDENCE),
        InfoOnlyFilter(),
        EfficientRAGConfig(**{"top_k": 3, "max_hops": 4, **config}),
    )


def spy_retrieve_batch(rag: EfficientRAG) -> list[list[str]]:
    """Record the questions of every ``retrieve_batch`` call (``retrieve`` goes through it too), so
    a test can tell one batched loop from one loop per question."""
    calls: list[list[str]] = []
    original = rag.retrieve_batch

    def spy(questions: Sequence[str]) -> list[RetrievalResult]:
        calls.append(list(questions))
        return original(questions)

    rag.retrieve_batch = spy  # type: ignore[method-assign]
    return calls

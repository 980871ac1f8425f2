"""The corpus's title links as a second opinion on the models' confident decisions (self-training
with ``agreement: links``).

A Labeler trained on other datasets is often confidently wrong on a new one: on HotpotQA's train
questions the models trained on 2Wiki + MuSiQue said Continue with p > 0.9 to paragraphs about
actors and novels that share one name with the question. Kept as pseudo-labels, such pairs teach
the model its own mistakes. The corpus offers a view that does not come from the model: a
multi-hop question names an entity whose paragraph links, by title mention, to the next one
(:mod:`efficientrag.adapt.links`). A confident Continue pair is *backed* when its chunk's title is
named in the question, or when its chunk and an already backed chunk of the same question link to
each other (either way), grown to a fixpoint. It is *contradicted* when it is not backed while
another pair of the same question is (the structure found the question's footing and this chunk is
not on it); a question with no backed pair keeps no confident Continue pair at all. Backed pairs
become Continue rows, with the mention of every other backed chunk's title labeled useful (the
bridge the Filter needs); contradicted ones become Terminate rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from tqdm.auto import tqdm

from efficientrag.adapt.chunk_text import ChunkText, chunk_texts
from efficientrag.adapt.links import LinkConfig, TitleMatcher, mine_links
from efficientrag.data.corpus import Corpus
from efficientrag.text.words import split_words


@dataclass
class Agreement:
    """One question's verdicts, by the index of its Labeler pairs."""

    backed: set[int]
    contradicted: set[int]
    # For a backed pair: word spans of its chunk that name another backed chunk's title.
    bridge_spans: dict[int, list[tuple[int, int]]]


class LinkView:
    """A corpus's title links, and the chunk each exact word sequence (as the Labeler reads it) is."""

    def __init__(self, texts: Sequence[ChunkText], cfg: LinkConfig | None = None) -> None:
        cfg = cfg or LinkConfig()
        self.matcher = TitleMatcher(texts, cfg)
        self.id_of_words = {t.words: t.id for t in texts}
        self.neighbours: dict[str, set[str]] = defaultdict(set)
        self.spans: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
        for link in mine_links(texts, cfg):
            self.neighbours[link.source].add(link.target)
            self.neighbours[link.target].add(link.source)
        # Every mention (not only a link's first), so a bridge is labeled wherever the chunk names it.
        for text in texts:
            for start, end, alias in self.matcher.mentions(text):
                for target in self.matcher.targets[alias]:
                    if target != text.id:
                        self.spans[(text.id, target)].append((start, end))

    @classmethod
    def of_corpus(cls, corpus: Corpus, cfg: LinkConfig | None = None, *, progress: bool = True) -> LinkView:
        texts = list(
            tqdm(chunk_texts(corpus.chunks), total=len(corpus), desc="read corpus", disable=not progress)
        )
        return cls(texts, cfg)

    def named_in(self, question: str) -> set[str]:
        """Chunks whose title (or its short form) the question names."""
        words = tuple(split_words(question))
        text = ChunkText("question", "", words, 0, ((0, len(words)),))
        return {cid for _, _, alias in self.matcher.mentions(text) for cid in self.matcher.targets[alias]}

    def judge(self, question: str, chunks: Sequence[Sequence[str]], confident: Sequence[bool]) -> Agreement:
        """Back or contradict each confident pair (given by its chunk's words) of one question."""
        ids = [self.id_of_words.get(tuple(words)) for words in chunks]
        named = self.named_in(question)
        backed_ids = {cid for cid, ok in zip(ids, confident, strict=True) if ok and cid in named}
        grew = True
        while grew:
            grew = False
            for cid, ok in zip(ids, confident, strict=True):
                if ok and cid is not None and cid not in backed_ids and self.neighbours[cid] & backed_ids:
                    backed_ids.add(cid)
                    grew = True
        backed = {i for i, cid in enumerate(ids) if confident[i] and cid in backed_ids}
        # Only where the structure found the question's footing among the pairs does it overrule.
        contradicted = {i for i, ok in enumerate(confident) if ok and i not in backed} if backed else set()
        spans = {
            i: sorted(
                s for other in backed_ids if other != ids[i] for s in self.spans.get((ids[i], other), ())
            )
            for i in backed
        }
        return Agreement(backed, contradicted, spans)

"""Multi-hop structure mined from a corpus alone: paragraphs that name another paragraph's title.

A multi-hop question follows exactly such a link: the first paragraph names the bridge entity,
whose own paragraph holds the answer (HotpotQA was written over Wikipedia hyperlinks; 2Wiki and
MuSiQue chain entity pages). Without gold, a title mention is the best available trace of it.

Matching is on whole words (``split_words``), case-sensitive, longest title first, so a title never
matches inside another word (``Art`` in ``Artist``) and ``Paul McCartney`` wins over ``Paul``.
Each title also answers to its name without a trailing parenthetical (``Kiss and Tell (1945 film)``
is mentioned as ``Kiss and Tell``); a full title beats such a short form when both exist. A match
inside a longer name is not a mention (``Army`` in ``the Red Army``, ``Airport`` in ``Palm Beach
International Airport``): a capitalized content word right before or after it rejects it.
A title shared by several chunks links to each of them (the same entity's paragraphs); a chunk
never links to a chunk with its own title. Titles that name nothing specific are skipped: no
capital letter, only stop words, or mentioned by more than ``max_mention_share`` of the
chunks (``English``, ``The Beatles`` in a music corpus), which would make every paragraph a bridge.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from efficientrag.adapt.chunk_text import ChunkText
from efficientrag.errors import InvalidArgumentError
from efficientrag.setting_fields import bounded, check_settings
from efficientrag.synth.phrases import is_content
from efficientrag.text.words import split_words

_PARENTHETICAL = re.compile(r"\s*\([^()]*\)\s*$")


@dataclass(frozen=True)
class LinkConfig:
    max_title_words: int = bounded(10, low=1)
    min_title_chars: int = 3
    # An alias mentioned by more chunks than this share (and more than min_generic_mentions) names
    # something too common to be a bridge.
    max_mention_share: float = bounded(0.02, above=0.0, high=1.0)
    min_generic_mentions: int = 5

    def __post_init__(self) -> None:
        check_settings(self)


@dataclass(frozen=True)
class Link:
    """``source`` names ``target``'s title at words ``[start, end)`` of its ``title: text`` words."""

    source: str
    target: str
    title: str
    start: int
    end: int


@dataclass(frozen=True)
class Chain:
    """Two or three chunks, each naming the next: ``links[i].target == links[i + 1].source``."""

    links: tuple[Link, ...]

    @property
    def chunk_ids(self) -> tuple[str, ...]:
        return (self.links[0].source, *(link.target for link in self.links))

    @property
    def id(self) -> str:
        return ">".join(self.chunk_ids)


def title_aliases(title: str) -> list[tuple[int, str]]:
    """(priority, alias): the title itself (0) and, if it ends in one, without its parenthetical (1)."""
    out = [(0, title.strip())]
    short = _PARENTHETICAL.sub("", title).strip()
    if short and short != out[0][1]:
        out.append((1, short))
    return out


class TitleMatcher:
    """Every usable alias of the corpus's titles, indexed by first word for a left-to-right scan."""

    def __init__(self, texts: Sequence[ChunkText], cfg: LinkConfig) -> None:
        self.cfg = cfg
        best: dict[tuple[str, ...], tuple[int, set[str], set[str]]] = {}
        for text in texts:
            if not text.title:
                continue
            for priority, alias in title_aliases(text.title):
                words = tuple(split_words(alias))
                if not self._usable(alias, words):
                    continue
                have = best.get(words)
                if have is None or priority < have[0]:
                    best[words] = (priority, {text.id}, {text.title})
                elif priority == have[0]:
                    have[1].add(text.id)
                    have[2].add(text.title)
        self.targets = {words: ids for words, (_, ids, _) in best.items()}
        self.titles = {words: titles for words, (_, _, titles) in best.items()}
        by_first: dict[str, list[tuple[str, ...]]] = defaultdict(list)
        for words in best:
            by_first[words[0]].append(words)
        self.by_first = {w: sorted(v, key=len, reverse=True) for w, v in by_first.items()}

    def _usable(self, alias: str, words: tuple[str, ...]) -> bool:
        if not words or len(words) > self.cfg.max_title_words:
            return False
        if sum(ch.isalnum() for ch in alias) < self.cfg.min_title_chars:
            return False
        if not any(ch.isupper() for ch in alias):
            return False  # a common word, or a bare year ("1922 (1978 film)" as "1922")
        return any(is_content(w) for w in words)

    def mentions(self, text: ChunkText) -> list[tuple[int, int, tuple[str, ...]]]:
        """(start, end, alias) of every title mention in the text part, leftmost-longest, no overlaps."""
        words = text.words
        out = []
        i = text.text_start
        while i < len(words):
            for alias in self.by_first.get(words[i], ()):
                end = i + len(alias)
                if (
                    tuple(words[i:end]) == alias
                    and not _extends(words, i - 1, text.text_start)
                    and not _extends(words, end, text.text_start)
                ):
                    out.append((i, end, alias))
                    i = end
                    break
            else:
                i += 1
        return out


def _extends(words: Sequence[str], position: int, text_start: int) -> bool:
    """Whether the word at ``position`` continues a name around a match (``Red`` before ``Army``,
    ``International`` before ``Airport``): the match is then part of another name."""
    if position < text_start or position >= len(words):
        return False
    word = words[position]
    return word[:1].isupper() and word.isalpha() and is_content(word)


def mine_links(texts: Sequence[ChunkText], cfg: LinkConfig | None = None) -> list[Link]:
    """One link per (source, target) pair, at the first mention, in corpus order."""
    cfg = cfg or LinkConfig()
    matcher = TitleMatcher(texts, cfg)
    found: list[tuple[ChunkText, list[tuple[int, int, tuple[str, ...]]]]] = []
    mentioned_by: dict[tuple[str, ...], set[str]] = defaultdict(set)
    for text in texts:
        hits = [h for h in matcher.mentions(text) if text.title not in matcher.titles[h[2]]]
        found.append((text, hits))
        for _, _, alias in hits:
            mentioned_by[alias].add(text.id)
    limit = max(cfg.min_generic_mentions, cfg.max_mention_share * len(texts))
    generic = {alias for alias, sources in mentioned_by.items() if len(sources) > limit}
    title_of = {t.id: t.title for t in texts}
    links: list[Link] = []
    for text, hits in found:
        seen: set[str] = set()
        for start, end, alias in hits:
            if alias in generic:
                continue
            for target in sorted(matcher.targets[alias]):
                if target == text.id or target in seen:
                    continue
                seen.add(target)
                links.append(Link(text.id, target, title_of[target], start, end))
    return links


def build_chains(
    links: Iterable[Link], titles: Mapping[str, str], *, max_hops: int = 3, max_extensions: int = 2
) -> list[Chain]:
    """Every link as a 2-chunk chain, and (``max_hops`` 3) each extended by up to
    ``max_extensions`` links out of its target to a third chunk with a title of its own.
    ``titles`` maps chunk ids to titles."""
    if max_hops not in (2, 3):
        raise InvalidArgumentError(f"max_hops must be 2 or 3, got {max_hops}")
    if max_extensions < 0:
        raise InvalidArgumentError(f"max_extensions must be >= 0, got {max_extensions}")
    links = list(links)
    out_of: dict[str, list[Link]] = defaultdict(list)
    for link in links:
        out_of[link.source].append(link)
    chains = [Chain((link,)) for link in links]
    if max_hops == 3:
        for first in links:
            used = {_norm(titles.get(first.source, "")), _norm(first.title)}
            extensions = [
                second
                for second in out_of.get(first.target, ())
                if second.target != first.source and _norm(second.title) not in used
            ]
            chains.extend(Chain((first, second)) for second in extensions[:max_extensions])
    return chains


def _norm(title: str) -> str:
    return " ".join(title.lower().split())

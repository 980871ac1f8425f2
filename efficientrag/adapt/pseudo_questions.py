"""Pseudo multi-hop questions written from a chain of linked paragraphs, with every label known.

For a chain ``C0 -> C1 (-> C2)`` (each paragraph names the next one's title) the question is made
of the paragraphs' own words, in the shape of a bridge question ("What government position was
held by the woman who portrayed Corliss Archer in the film Kiss and Tell?"): the part about the
answer first, then the part that identifies the bridge, then the first entity:

    wh-word + answer clue (from the last paragraph) + one window per link, last link first
    (from the paragraph that names the next one) + the first paragraph's title + "?"

- The *answer* is the first capitalized name or number in the last paragraph, outside its title,
  that has a clue: at least ``min_clue_content`` lower-case content words (relation words:
  "directed", "born") among the words right before it in its sentence.
- A *window* is the (up to ``clue_words``) words right before the mention of the next title in
  its sentence (after it when nothing usable precedes it): the relation the question asks about
  ("film starring", "directed by").
- Words of the bridged titles never enter the question (the hidden entities of a real bridge
  question) unless the first title has them too; a chain whose first title names a bridged
  entity outright is refused.

Labels follow the annotation teacher's rows (``efficientrag.synth``): at each hop the useful
words are the content words of the window and the next title's mention (the last hop: of the
clue, and the answer); the next-hop query is the previous query without the resolved part (its last window and
the entity that named this paragraph), then the mention, appended after the question mark as
in ``"What did the win a Tony for ? Audrey Hepburn"``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from efficientrag.adapt.chunk_text import ChunkText
from efficientrag.adapt.links import Chain, title_aliases
from efficientrag.models.inputs import filter_words
from efficientrag.setting_fields import SettingError, bounded, check_settings
from efficientrag.synth.phrases import is_content, is_punct, loose_key
from efficientrag.synth.records import Reject
from efficientrag.text.words import join_words, split_words

R_NO_ANSWER = "no answer span with a clue in the last paragraph"
R_TITLE_INSIDE = "the first title names a bridged entity"
R_NO_WINDOW = "no usable words around a mention"

_CONNECTORS = frozenset({"of", "the", "and", "de", "du", "da", "del", "von", "van", "la", "le", "'s", "-"})
_YEAR = re.compile(r"^(1[0-9]{3}|20[0-9]{2})$")
_PRONOUNS = frozenset({"he", "she", "it", "they", "his", "her", "its", "their", "him", "them"})


@dataclass(frozen=True)
class PseudoConfig:
    clue_words: int = bounded(6, low=1)
    min_clue_content: int = bounded(2, low=1)

    def __post_init__(self) -> None:
        check_settings(self)
        if self.min_clue_content > self.clue_words:
            raise SettingError(f"min_clue_content {self.min_clue_content} > clue_words {self.clue_words}")


@dataclass(frozen=True)
class PseudoHop:
    """What the Labeler sees and should answer at one hop, and the Filter row that follows it."""

    chunk_id: str
    query_words: list[str]
    chunk_words: list[str]
    labels: list[int]
    filter_words: list[str] | None = None  # None at the last hop: no next query
    filter_labels: list[int] | None = None


@dataclass(frozen=True)
class PseudoQuestion:
    id: str
    question_words: list[str]
    answer: str
    hops: list[PseudoHop]
    # Chunks naming the same entities as the chain (same titles): never negatives.
    entity_titles: list[str]
    mentions: list[str]

    @property
    def question(self) -> str:
        return join_words(self.question_words)

    @property
    def gold(self) -> list[str]:
        return [hop.chunk_id for hop in self.hops]

    @property
    def single_words(self) -> list[str]:
        """The same question about the last paragraph alone: its answer clue and the entity that
        names it ("What did win a Tony for Audrey Hepburn ?"), the last hop's query with the
        question mark at the end. One search can answer it, so a corpus's pseudo-validation can
        tell when hops do not pay."""
        return [w for w in self.hops[-1].query_words if w != "?"] + ["?"]


def make_question(
    chain: Chain, texts: Mapping[str, ChunkText], cfg: PseudoConfig | None = None
) -> PseudoQuestion:
    """The pseudo question of ``chain``; raises :class:`Reject` (with a reason) when it has none."""
    cfg = cfg or PseudoConfig()
    chunks = [texts[cid] for cid in chain.chunk_ids]
    # How the bridged entities are named (their mentions, their titles without qualifiers), less
    # the words the first title shares with them: "Nick Kellogg -> Clark Kellogg" keeps "Kellogg"
    # in the question, as 2Wiki's "Who is the father of Nick Kellogg?" does.
    first_title = split_words(title_aliases(chunks[0].title)[-1][1])
    first_keys = {loose_key(w) for w in first_title if is_content(w)}
    hidden = set()
    for k, link in enumerate(chain.links):
        named = {loose_key(w) for w in chunks[k].words[link.start : link.end] if is_content(w)}
        named |= {loose_key(w) for w in split_words(title_aliases(link.title)[-1][1]) if is_content(w)}
        if named <= first_keys:
            raise Reject(R_TITLE_INSIDE, f"{chunks[0].title!r} names {link.title!r}")
        hidden |= named - first_keys

    last = chunks[-1]
    answer = _answer_span(last, hidden, cfg)
    if answer is None:
        raise Reject(R_NO_ANSWER, f"chunk {last.id} ({last.title!r})")
    ans_start, ans_end, clue = answer
    answer_words = list(last.words[ans_start:ans_end])
    answer_keys = {loose_key(w) for w in answer_words if not is_punct(w)}

    windows: list[list[int]] = []  # positions in chunks[k], per link k
    for k, link in enumerate(chain.links):
        window = _window(chunks[k], link.start, link.end, hidden | answer_keys, cfg)
        if window is None:
            raise Reject(R_NO_WINDOW, f"mention of {link.title!r} in chunk {chunks[k].id}")
        windows.append(window)
    mention_words = [list(chunks[k].words[link.start : link.end]) for k, link in enumerate(chain.links)]

    wh = ["When"] if len(answer_words) == 1 and _YEAR.match(answer_words[0]) else ["What"]
    clue_words = [last.words[i] for i in clue]
    window_words = [[chunks[k].words[i] for i in w] for k, w in enumerate(windows)]
    in_window = {loose_key(w) for w in window_words[0]}
    title_part = [w for w in first_title if loose_key(w) not in in_window]

    # The query as (word, segment) pairs: "head" (wh-word and answer clue) and "?" stay to the end,
    # window k and the words naming paragraph k are resolved at hop k.
    query: list[tuple[str, str]] = [(w, "head") for w in wh + clue_words]
    for k in reversed(range(len(windows))):
        query += [(w, f"window{k}") for w in window_words[k]]
    query += [(w, "name0") for w in title_part] + [("?", "?")]
    hops: list[PseudoHop] = []
    for k, text in enumerate(chunks):
        words = [w for w, _ in query]
        if k == len(chain.links):
            positions = {i for i in clue if is_content(text.words[i])} | set(range(ans_start, ans_end))
            labels = [1 if i in positions else 0 for i in range(len(text.words))]
            hops.append(PseudoHop(text.id, words, list(text.words), labels))
            break
        link = chain.links[k]
        mention = set(range(link.start, link.end))
        positions = {i for i in windows[k] if is_content(text.words[i])} | mention
        labels = [1 if i in positions else 0 for i in range(len(text.words))]
        info = [text.words[i] for i in sorted(positions)]
        resolved = {f"window{k}", f"name{k}"}
        fwords = filter_words(words, [info])
        flabels = [0, 0] + [0 if seg in resolved else 1 for _, seg in query] + [0, 0]
        flabels += [1 if i in mention else 0 for i in sorted(positions)]
        hops.append(PseudoHop(text.id, words, list(text.words), labels, fwords, flabels))
        query = [(w, seg) for w, seg in query if seg not in resolved]
        query += [(w, f"name{k + 1}") for w in mention_words[k]]
    entity_titles = [t.title for t in chunks]
    return PseudoQuestion(
        id=chain.id,
        question_words=hops[0].query_words,
        answer=join_words(answer_words),
        hops=hops,
        entity_titles=entity_titles,
        mentions=[join_words(m) for m in mention_words],
    )


def _answer_span(text: ChunkText, hidden: set[str], cfg: PseudoConfig) -> tuple[int, int, list[int]] | None:
    own = {loose_key(w) for _, alias in title_aliases(text.title) for w in split_words(alias)}
    for start, end in _name_spans(text):
        keys = {loose_key(w) for w in text.words[start:end] if not is_punct(w)}
        if not keys or keys & own or keys & hidden:
            continue
        s0, _ = text.sentence_of(start)
        clue = _clean(text, range(max(s0, start - cfg.clue_words), start), hidden | own | keys)
        if sum(_relation_word(text.words[i]) for i in clue) >= cfg.min_clue_content:
            return start, end, clue
    return None


def _name_spans(text: ChunkText) -> list[tuple[int, int]]:
    """Maximal runs of capitalized words or numbers in the text part (connectors inside a run)."""
    words = text.words
    starts = {s for s, _ in text.sentences}
    spans = []
    i = text.text_start
    while i < len(words):
        if _name_word(words[i]) and not (i in starts and not is_content(words[i])):
            j = i + 1
            while j < len(words) and (
                _name_word(words[j])
                or (words[j] in _CONNECTORS and j + 1 < len(words) and _name_word(words[j + 1]))
            ):
                j += 1
            spans.append((i, j))
            i = j
        else:
            i += 1
    return spans


def _relation_word(word: str) -> bool:
    """A lower-case content word ("directed", "born", "capital"): what a clue asks about."""
    return word[:1].islower() and is_content(word)


def _name_word(word: str) -> bool:
    return (word[:1].isupper() and any(c.isalpha() for c in word)) or word.isdigit()


def _window(text: ChunkText, start: int, end: int, hidden: set[str], cfg: PseudoConfig) -> list[int] | None:
    s0, s1 = text.sentence_of(start)
    before = _clean(text, range(max(s0, start - cfg.clue_words), start), hidden)
    if any(is_content(text.words[i]) for i in before):
        return before
    after = _clean(text, range(end, min(s1, end + cfg.clue_words)), hidden)
    if any(is_content(text.words[i]) for i in after):
        return after
    return None


def _clean(text: ChunkText, positions: range, hidden: set[str]) -> list[int]:
    """Positions without punctuation, pronouns and hidden words (bridged titles, the answer)."""
    out = []
    for i in positions:
        w = text.words[i]
        if is_punct(w) or w.lower() in _PRONOUNS or loose_key(w) in hidden:
            continue
        out.append(i)
    return out

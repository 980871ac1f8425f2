"""DRAGIN (Su et al. 2024): retrieve when RIND detects an information need, with a query built by
QFS from the model's own attention.

``variant="paper"`` (the default), per round:

1. Generate the rest of the answer with the current documents (none at first), keeping entropies
   and the last-layer attention over prompt + output.
2. RIND: S(t_i) = H_i * max_{j>i} A[j, i] * s_i over the new tokens (:mod:`.active.rind`); the
   first token above theta triggers. After a retrieval the first word of the continuation cannot
   trigger (it was just written with the new documents; without this a token could trigger the
   same retrieval forever).
3. Truncate the output at the start of the triggering token's word; QFS: the ``top_n`` question /
   output tokens the triggering token attends to most, as words in text order (:mod:`.active.qfs`).
4. Retrieve ``top_k`` documents; they replace the previous ones; continue from the truncated text.

``variant="official"``, per round (the official code's ``AttnWeightRAG``): generate without
documents; score words per sentence from attention recomputed over the new text alone; at the
first sentence with a word above theta, keep the sentences before it, drop the whole sentence,
build the query from a second attention pass over question + text + that sentence, retrieve,
regenerate with the documents and keep one sentence; the next round again has no documents.

Both need a local model (entropies over the whole vocabulary and attention weights); decoding is
greedy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from efficientrag.baselines.active.content_words import (
    content_flags_pos,
    is_content_word,
    pos_tagger_available,
    word_spans,
)
from efficientrag.baselines.active.loop import Attend, Program, Session
from efficientrag.baselines.active.method import ActiveCommon, ActiveMethod
from efficientrag.baselines.active.qfs import official_word_attention, qfs_official, qfs_paper, words_at
from efficientrag.baselines.active.queries import glued
from efficientrag.baselines.active.rind import (
    covering,
    rind_paper,
    sentence_scores_official,
    spans_of,
    token_influence_official,
)
from efficientrag.baselines.active.sentences import (
    sentence_spans,
    tokens_before,
)
from efficientrag.errors import InvalidArgumentError
from efficientrag.llm.generator import GeneratorCapabilityError
from efficientrag.setting_fields import bounded


@dataclass
class DraginConfig(ActiveCommon):
    """DRAGIN (Su et al. 2024): RIND decides when, QFS what to retrieve. Defaults: DRAGIN's
    Llama2-13b-chat HotpotQA setting (its Table 9: theta 1.2, top-n 35)."""

    # "paper": Eq. 5 per token (entropy x max attention from later tokens x stopword indicator),
    # truncate at the trigger, continue with the documents. "official": the code's word-level,
    # per-sentence-normalised scores, POS filter after the trigger, whole-sentence discard.
    variant: Literal["paper", "official"] = "paper"
    theta: float = 1.2
    # QFS: tokens (paper) / words (official) of the context kept in the query.
    top_n: int = bounded(35, low=1)
    # A JSON file from efficientrag.baselines.active.calibrate (theta = a quantile of this model's
    # first-round scores on training questions); when set, theta is taken from it. For models whose
    # score scale differs from the paper's 7B-13B models (docs/real_llm.md).
    theta_calibration: str | None = None


class Dragin(ActiveMethod):
    name = "dragin"
    config_class = DraginConfig
    needs = {"entropies": True, "attention": True}
    cfg: DraginConfig

    def setup(self) -> None:
        super().setup()
        cfg = self.cfg = calibrated(self.cfg) if self.cfg.theta_calibration else self.cfg
        if cfg.variant == "official" and not callable(getattr(self.generator, "attend", None)):
            raise GeneratorCapabilityError(
                f"dragin (official variant) recomputes attention over a given text, which generator "
                f"{self.generator.name!r} cannot do; use a local Hugging Face model"
            )
        # Whether the official POS filter runs (it needs en_core_web_sm) or falls back to stopwords.
        self.pos_filter = cfg.variant == "official" and pos_tagger_available()

    def program(self, s: Session) -> Program:
        if self.cfg.variant == "paper":
            yield from self._paper(s)
        else:
            yield from self._official(s)

    # -- the paper's version ------------------------------------------------------------------------

    def _paper(self, s: Session) -> Program:
        cfg = self.cfg
        docs: list = []
        rounds = 0
        while self.remaining_for(s) > 0:
            prompt = self.render(s, docs)
            g = yield self.generate(s, docs, self.remaining_for(s), entropies=True, attention=True)
            pieces = self.until_answer(g)
            n = len(pieces)
            if not pieces:
                s.log(kind="end", reason="empty generation")
                return
            view = g.attention
            start = view.prompt_length
            scores = rind_paper(g.entropies[:n], view.weights, start, token_content(pieces))
            exempt = first_word_length(pieces) if rounds else 0
            rounds += 1
            trigger = next((i for i in range(exempt, n) if scores[i] > cfg.theta), None)
            step = {"kind": "generate", "doc_ids": [d.id for d in docs], "max_score": float(scores.max())}
            if trigger is None:
                s.log(**step, triggered=False, text=s.accept(pieces))
                return
            cut = word_start(pieces, trigger)
            kept = s.accept(pieces[:cut])
            candidates = [
                j
                for j in range(start + trigger)
                if _has_alnum(view.tokens[j])
                and (j >= start or _inside(view.offsets[j], prompt.question_span, prompt.answer_start))
            ]
            picked = qfs_paper(view.weights[start + trigger], candidates, cfg.top_n)
            query = self.trim_query(" ".join(words_at(view.text, view.offsets, picked))) or s.question
            hits = yield self.retrieve(query)
            docs = s.hold(hits[0])
            s.log(
                **step,
                triggered=True,
                text=kept,
                kept_tokens=cut,
                trigger_token=pieces[trigger],
                trigger_index=trigger,
                trigger_score=float(scores[trigger]),
                query=query,
                query_positions=picked,
                question_chars=list(prompt.question_span),
                new_doc_ids=[d.id for d in docs],
            )

    # -- the official code's version ------------------------------------------------------------------

    def _official(self, s: Session) -> Program:
        cfg = self.cfg
        while self.remaining_for(s) > 0:
            g = yield self.generate(s, (), self.remaining_for(s), entropies=True)
            pieces = self.until_answer(g)
            n = len(pieces)
            if not pieces:
                s.log(kind="end", reason="empty generation")
                return
            text = "".join(pieces)
            view = yield Attend(text, per_head=True)
            words = word_spans(text)
            influence = token_influence_official(view.per_head)
            word_attn = [float(influence[k].sum()) for k in covering(view.offsets, words)]
            entropies = np.asarray(g.entropies[:n], dtype=np.float64)
            word_ent = [float(entropies[t].mean()) if t else 0.0 for t in covering(spans_of(pieces), words)]
            sents = sentence_spans(text)
            sent_words = [range(*_word_range(words, a, b)) for a, b in sents]
            scores = sentence_scores_official(word_attn, word_ent, sent_words)
            hot = next((k for k, r in enumerate(sent_words) if any(scores[w] > cfg.theta for w in r)), None)
            if hot is None:
                s.log(
                    kind="generate",
                    triggered=False,
                    max_score=float(scores.max(initial=0.0)),
                    text=s.accept(pieces),
                )
                return
            hit = [w for w in sent_words[hot] if scores[w] > cfg.theta]
            flags = content_flags_pos(text, [words[w] for w in hit])
            # The code divides by the number of content hit words; with none it would divide by zero.
            hit_words = [w for w, f in zip(hit, flags, strict=True) if f] or hit
            sent_a, sent_b = sents[hot]
            prev = tokens_before(pieces, sent_a)
            query = yield from self._official_query(
                s, "".join(pieces[:prev]), text, words, sent_a, sent_b, hit_words
            )
            hits = yield self.retrieve(query)
            docs = s.hold(hits[0])
            before = s.accept(pieces[:prev])
            if self.remaining_for(s) == 0:
                s.log(kind="generate", triggered=True, text=before, query=query, reason="length used up")
                return
            g2 = yield self.generate(s, docs, self.remaining_for(s), kind="regenerate")
            p2, m, answered, stopped = self.first_sentence(g2)
            sentence = s.accept(p2[:m])
            s.log(
                kind="generate",
                triggered=True,
                pos_filter=self.pos_filter,
                text=before,
                dropped=text[sent_a:sent_b],
                hit_words=[text[slice(*words[w])] for w in hit_words],
                query=query,
                doc_ids=[d.id for d in docs],
                regenerated=sentence,
            )
            if answered or (stopped and m == len(p2)) or (prev == 0 and m == 0):
                return

    def _official_query(
        self,
        s: Session,
        ptext: str,
        text: str,
        words: Sequence[tuple[int, int]],
        sent_a: int,
        sent_b: int,
        hit_words: Sequence[int],
    ) -> Program:
        sentence = text[sent_a:sent_b]
        prefix = " ".join(p for p in (s.question.strip(), s.answer.strip(), ptext.strip()) if p)
        context = f"{prefix} {sentence}" if prefix else sentence
        shift = len(context) - len(sentence) - sent_a
        ctx_words = word_spans(context)
        hit_starts = {words[w][0] + shift for w in hit_words}
        ctx_hits = [i for i, (a, _) in enumerate(ctx_words) if a in hit_starts]
        qview = yield Attend(context)
        word_attn = official_word_attention(qview.weights, covering(qview.offsets, ctx_words))
        content = content_flags_pos(context, ctx_words)
        picked = qfs_official(word_attn, ctx_hits, content, self.cfg.top_n)
        return self.trim_query(" ".join(context[slice(*ctx_words[i])] for i in picked)) or s.question


def calibrated(cfg: DraginConfig) -> DraginConfig:
    """``cfg`` with theta from its calibration file (which must be for the same variant)."""
    from efficientrag.baselines.active.calibrate import ThetaCalibration

    assert cfg.theta_calibration
    cal = ThetaCalibration.load(cfg.theta_calibration)
    if cal.variant != cfg.variant:
        raise InvalidArgumentError(
            f"{cfg.theta_calibration}: calibrated for DRAGIN variant {cal.variant!r}, but this run uses "
            f"{cfg.variant!r}; the two score on different scales, calibrate again"
        )
    return dataclasses.replace(cfg, theta=cal.theta)


def token_content(pieces: Sequence[str]) -> list[bool]:
    """The paper's s_i per token: its whitespace word is not a stopword, and the token itself has
    a letter or digit."""
    text = "".join(pieces)
    words = word_spans(text)
    flags = []
    for a, b in spans_of(pieces):
        chunk = text[a:b]
        c = a + len(chunk) - len(chunk.lstrip())
        word = next((text[x:y] for x, y in words if x <= c < y), "")
        flags.append(_has_alnum(chunk) and is_content_word(word))
    return flags


def word_start(pieces: Sequence[str], i: int) -> int:
    """Index of the first token of the word token ``i`` belongs to."""
    while i > 0 and glued(pieces[i - 1], pieces[i]):
        i -= 1
    return i


def first_word_length(pieces: Sequence[str]) -> int:
    n = 1
    while n < len(pieces) and glued(pieces[n - 1], pieces[n]):
        n += 1
    return n


def _has_alnum(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def _inside(span: tuple[int, int], question: tuple[int, int], answer_start: int) -> bool:
    """A prompt token belongs to the question or to the answer written so far."""
    a, b = span
    return (a < question[1] and b > question[0]) or a >= answer_start


def _word_range(words: Sequence[tuple[int, int]], a: int, b: int) -> tuple[int, int]:
    idx = [i for i, (x, _) in enumerate(words) if a <= x < b]
    return (idx[0], idx[-1] + 1) if idx else (0, 0)

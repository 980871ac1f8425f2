"""FLARE (Jiang et al. 2023): forward-looking active retrieval.

FLARE-direct, per step t (``docs/active_rag.md`` has the formulas and every switch):

1. Look ahead: generate up to ``look_ahead`` tokens and keep the first sentence s^_t. Step 1 uses
   the documents retrieved with the question (s^_1 = LM([D_x, x])); later look-aheads see no
   documents (``keep_docs_in_lookahead``: the latest ones, as the official code does).
2. Trigger: retrieval fires when any token of s^_t has probability < theta (``trigger_rule``
   "mean_one_minus_p": mean(1 - p) > theta, DRAGIN's re-implementation; ``inclusive_thresholds``:
   <= as in the official code). Otherwise s^_t is accepted as it is.
3. Query: s^_t with the tokens below beta deleted (masked), or one generated question per span of
   tokens below beta, whose result lists are merged by rank (explicit).
4. Regenerate the sentence with the new documents (they replace the previous ones) and keep its
   first sentence; it is not re-checked.

FLARE-instruct: the model writes ``[Search(query)]`` itself, pushed by a +2.0 bias on "[". The
query is cut out of the text, its documents replace the previous ones, and the next few tokens
are generated with a large negative bias on "[".
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from efficientrag.baselines.active.loop import Generate, Program, Session
from efficientrag.baselines.active.method import ActiveCommon, ActiveMethod
from efficientrag.baselines.active.queries import below, interleave, low_spans, masked_query, tidy
from efficientrag.baselines.active.sentences import tokens_through
from efficientrag.baselines.base import Prediction
from efficientrag.baselines.prompts.continuation import InstructPromptBuilder, PromptBuilder, question_prompt
from efficientrag.data.schema import Example
from efficientrag.errors import InvalidArgumentError
from efficientrag.llm.generator import Generation, Generator, GeneratorCapabilityError
from efficientrag.setting_fields import bounded


@dataclass
class FlareConfig(ActiveCommon):
    """FLARE-direct (Jiang et al. 2023, section 3.2). Defaults: the paper's 2WikiMultihopQA setting
    (FLARE's Table 9). Where the paper and its official code disagree, the paper's behaviour is the
    default and the code's is a switch (``docs/active_rag.md`` lists every difference)."""

    num_exemplars: int = 8
    top_k: int = 2
    max_new_tokens: int = 256
    # theta: a look-ahead sentence triggers retrieval when any token's probability is below it.
    theta: float = bounded(0.8, low=0.0, high=1.0)
    # beta: query tokens below this probability are masked (masked queries) or asked about (explicit).
    beta: float = bounded(0.4, low=0.0, high=1.0)
    # Tokens generated per look-ahead; the first sentence is kept.
    look_ahead: int = bounded(64, low=1)
    query: Literal["masked", "explicit"] = "masked"
    # "any_token": min probability < theta (the paper); "mean_one_minus_p": mean of (1 - p) over the
    # sentence > theta (DRAGIN's re-implementation, sentence_solver "avg").
    trigger_rule: Literal["any_token", "mean_one_minus_p"] = "any_token"
    # Compare with <= instead of < (the official code: retrieve if any p <= theta, mask p <= beta).
    inclusive_thresholds: bool = False
    # The official code keeps the latest documents in the prompt while looking ahead
    # (reinit_ctx=false); the paper generates look-aheads without documents.
    keep_docs_in_lookahead: bool = False
    # Retrieve with the question before the first sentence (the paper and the official 2Wiki config).
    initial_retrieval: bool = True
    # FLARE's 2Wiki exemplars carry documents retrieved with each exemplar's question.
    exemplar_docs: bool = False
    # Explicit queries: low-probability tokens at most this many tokens apart form one span (the
    # official code merges within 5); 0 joins only adjacent tokens.
    span_gap: int = bounded(0, low=0)
    question_max_new_tokens: int = bounded(32, low=1)


@dataclass
class FlareInstructConfig(ActiveCommon):
    """FLARE-instruct: the model writes ``[Search(query)]`` itself (FLARE section 3.1)."""

    num_exemplars: int = 8
    top_k: int = 2
    max_new_tokens: int = 256
    # Added to the logit of "[" while generating, so queries come more often (the paper: +2.0).
    # Biases lie in [-100, 100], the OpenAI API's range.
    search_bias: float = bounded(2.0, low=-100.0, high=100.0)
    # After a query: this bias on "[" for the next ``ban_tokens`` tokens ("a large negative value
    # for the next few tokens"; the count is not in the paper).
    ban_bias: float = bounded(-100.0, low=-100.0, high=100.0)
    ban_tokens: int = bounded(8, low=0)
    # Vocabulary ids of "[" for the bias. Empty: found in a local model's vocabulary; an API
    # generator needs them given (they depend on the server's tokenizer).
    bracket_token_ids: list[int] = field(default_factory=list)
    initial_retrieval: bool = False


def flare_triggers(
    probs: Sequence[float], theta: float, rule: str = "any_token", inclusive: bool = False
) -> bool:
    """Whether a look-ahead sentence with these token probabilities triggers retrieval."""
    if not probs:
        return False
    if rule == "any_token":
        return any(below(p, theta, inclusive) for p in probs)
    if rule == "mean_one_minus_p":
        mean = sum(1.0 - p for p in probs) / len(probs)
        return mean >= theta if inclusive else mean > theta
    raise InvalidArgumentError(f"unknown trigger rule {rule!r}")


class Flare(ActiveMethod):
    """FLARE-direct."""

    name = "flare"
    config_class = FlareConfig
    needs = {"token_probs": True}
    cfg: FlareConfig

    def setup(self) -> None:
        super().setup()
        self._exemplar_docs_ready = not self.cfg.exemplar_docs

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        if not self._exemplar_docs_ready:
            # FLARE's 2Wiki setting: each exemplar shows the documents its own question retrieves
            # (once per method, not charged to any question).
            hits = self.retriever.search([ex.question for ex in self.exemplars], self.cfg.top_k)
            docs = [[h.chunk for h in hs] for hs in hits]
            self.prompts = PromptBuilder(
                self.exemplars, max_doc_words=self.cfg.max_doc_words, exemplar_docs=docs
            )
            self._exemplar_docs_ready = True
        return super().run_batch(examples)

    def program(self, s: Session) -> Program:
        cfg = self.cfg
        docs = yield from initial_docs(self, s)
        first = True
        while self.remaining_for(s) > 0:
            budget = min(cfg.look_ahead, self.remaining_for(s))
            look_docs = docs if (first or cfg.keep_docs_in_lookahead) else []
            g = yield self.generate(s, look_docs, budget, kind="lookahead", token_probs=True)
            pieces, probs, answered, finished = self._sentence(g)
            if not pieces:
                s.log(kind="end", reason="empty look-ahead")
                return
            step: dict[str, Any] = {
                "kind": "lookahead",
                "lookahead": "".join(pieces),
                "lookahead_doc_ids": [d.id for d in look_docs],
                "min_prob": min(probs),
            }
            first = False
            if not flare_triggers(probs, cfg.theta, cfg.trigger_rule, cfg.inclusive_thresholds):
                s.accept(pieces)
                s.log(**step, retrieved=False)
                if answered or finished:
                    return
                continue
            queries = yield from self._queries(s, pieces, probs, step)
            hits = yield self.retrieve(*queries)
            docs = s.hold(interleave(hits, cfg.top_k) if len(hits) > 1 else hits[0])
            # Probabilities are not needed here, but asking for them makes an API return its tokens.
            g = yield self.generate(s, docs, budget, kind="regenerate", token_probs=True)
            pieces, _, answered, finished = self._sentence(g)
            sentence = s.accept(pieces)
            s.log(**step, retrieved=True, queries=list(queries), doc_ids=[d.id for d in docs], text=sentence)
            if answered or finished or not pieces:
                return

    def _sentence(self, g: Generation) -> tuple[list[str], list[float], bool, bool]:
        """The first sentence of a generation (cut after the answer sentence): its pieces and
        probabilities, whether it completes the answer, whether the model stopped after it."""
        pieces, n, answered, stopped = self.first_sentence(g)
        probs = list(g.token_probs[:n]) if g.token_probs is not None else []
        return pieces[:n], probs, answered, stopped and n == len(pieces)

    def _queries(self, s: Session, pieces: list[str], probs: list[float], step: dict[str, Any]) -> Program:
        cfg = self.cfg
        masked = masked_query(pieces, probs, cfg.beta, cfg.inclusive_thresholds)
        step["masked"] = [i for i, p in enumerate(probs) if below(p, cfg.beta, cfg.inclusive_thresholds)]
        if cfg.query == "masked":
            return (self.trim_query(masked) or s.question,)
        spans = low_spans(pieces, probs, cfg.beta, inclusive=cfg.inclusive_thresholds, gap=cfg.span_gap)
        if not spans:
            return (self.trim_query(masked) or s.question,)
        passage = tidy(s.answer + "".join(pieces))
        terms = [tidy("".join(pieces[a:b])) for a, b in spans]
        gens = yield [
            Generate(
                question_prompt(passage, term),
                max_new_tokens=cfg.question_max_new_tokens,
                stop=("\n",),
                kind="question",
            )
            for term in terms
        ]
        questions = [tidy(g.text) for g in gens]
        step["spans"] = terms
        step["questions"] = questions
        fallback = masked or s.question
        return tuple(self.trim_query(q or fallback) for q in questions)


SEARCH_OPEN = "[Search("
SEARCH_CLOSE = ")]"


class FlareInstruct(ActiveMethod):
    """FLARE-instruct."""

    name = "flare_instruct"
    config_class = FlareInstructConfig
    cfg: FlareInstructConfig

    def setup(self) -> None:
        super().setup()
        cfg, generator = self.cfg, self.generator
        self.prompts = InstructPromptBuilder(self.exemplars, max_doc_words=cfg.max_doc_words)
        ids = list(cfg.bracket_token_ids) or bracket_ids(generator)
        wants_bias = cfg.search_bias != 0.0 or (cfg.ban_bias != 0.0 and cfg.ban_tokens > 0)
        if wants_bias:
            if not _takes(generator.generate, "logit_bias"):
                raise GeneratorCapabilityError(
                    f"flare_instruct biases the logit of '[' but generator {generator.name!r} takes no logit_bias; "
                    "set baselines.flare_instruct.search_bias=0 and ban_tokens=0 to run without it"
                )
            if not ids:
                raise GeneratorCapabilityError(
                    f"flare_instruct cannot find the token id of '[' for generator {generator.name!r}; set "
                    "baselines.flare_instruct.bracket_token_ids to its ids in the server's tokenizer"
                )
        self.search_bias = tuple((i, cfg.search_bias) for i in ids) if cfg.search_bias else ()
        self.ban_bias = tuple((i, cfg.ban_bias) for i in ids) if cfg.ban_bias else ()

    def program(self, s: Session) -> Program:
        cfg = self.cfg
        docs = yield from initial_docs(self, s)
        banned = False
        while self.remaining_for(s) > 0:
            budget = self.remaining_for(s)
            if banned and cfg.ban_tokens > 0:
                budget, bias = min(cfg.ban_tokens, budget), self.ban_bias
            else:
                bias = self.search_bias
            g = yield Generate(
                self.render(s, docs).text,
                max_new_tokens=budget,
                stop=(*cfg.stop, SEARCH_CLOSE),
                logit_bias=bias,
                kind="answer",
            )
            pieces = self.usable(g)
            at = g.text.find(SEARCH_OPEN)
            if at < 0:
                n, answered = self.through_answer(pieces, g.finish_reason == "stop")
                text = s.accept(pieces[:n])
                s.log(kind="generate", text=text, doc_ids=[d.id for d in docs])
                # A stop may be the end of the text or a stray ")]" (also a stop sequence here): the
                # text goes on until the model has nothing more to add.
                if answered or n == 0:
                    return
                banned = False
                continue
            kept = tokens_through(pieces, at)
            before = s.accept_text(g.text[:at], kept)
            query = g.text[at + len(SEARCH_OPEN) :].split(")")[0].strip()
            closed = g.finish_reason == "stop" or ")" in g.text[at:]
            if not closed:
                s.log(kind="generate", text=before, unfinished_query=query)
                return
            banned = True
            if not query:
                s.log(kind="generate", text=before, empty_query=True)
                continue
            hits = yield self.retrieve(self.trim_query(query))
            docs = s.hold(hits[0])
            s.log(kind="search", text=before, query=query, doc_ids=[d.id for d in docs])


def initial_docs(method: Flare | FlareInstruct, s: Session) -> Program:
    """The documents of one retrieval with the question when ``initial_retrieval`` is on (none
    otherwise): ``docs = yield from initial_docs(self, s)``."""
    if not method.cfg.initial_retrieval:
        return []
    hits = yield method.retrieve(s.question)
    docs = s.hold(hits[0])
    s.log(kind="initial_retrieval", query=s.question, doc_ids=[d.id for d in docs])
    return docs


def _takes(fn: Any, name: str) -> bool:
    params = inspect.signature(fn).parameters.values()
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def bracket_ids(generator: Generator) -> list[int]:
    """Ids of the vocabulary entries that decode to "[" (with or without a leading space) in a local
    model's tokenizer; [] for generators without one."""
    tokenizer = getattr(generator, "tokenizer", None)
    if tokenizer is None:
        return []
    return [i for i in range(len(tokenizer)) if tokenizer.decode([i]).strip() == "["]

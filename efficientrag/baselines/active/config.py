"""Settings of the active RAG methods, under ``active:`` in an experiment YAML.

One sub-config per method. They share :class:`ActiveCommon` (exemplars, documents per retrieval,
generation length, stop sequences), so a preset can give every method of one comparison the same
prompt and budget, as DRAGIN's Table 1 does. Defaults: FLARE's are the paper's 2WikiMultihopQA
setting (Table 9 of FLARE: theta 0.8, beta 0.4, masked queries, 2 documents, 8 exemplars, 256
tokens); DRAGIN and its baselines default to DRAGIN's Llama2-13b-chat HotpotQA setting (Table 9 of
DRAGIN: theta 1.2, top-n 35, 100 tokens, 3 BM25 documents, 8 exemplars). Presets under
``configs/paper/`` set the per-model, per-dataset values.

Where the papers and their official code disagree, the paper's behaviour is the default and the
code's is a switch (``docs/active_rag.md`` lists every difference).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

EXEMPLAR_SETS = ("auto", "hotpotqa", "2wikimultihopqa", "musique", "iirc", "strategyqa", "toy")
_EXEMPLAR_ALIASES = {"2wiki": "2wikimultihopqa", "2wikimqa": "2wikimultihopqa", "hotpot": "hotpotqa"}


@dataclass
class ActiveCommon:
    # Few-shot exemplar set: "auto" follows data.dataset (jsonl data gets the HotpotQA set).
    exemplars: str = "auto"
    num_exemplars: int = 8
    # Documents per retrieval.
    top_k: int = 3
    # The generation length: tokens of the whole answer (DRAGIN's "generate length", FLARE's
    # max_generation_len).
    max_new_tokens: int = 100
    # Each document is cut to this many words in the prompt (None: whole chunk).
    max_doc_words: int | None = None
    # Retrieval queries keep only their last this-many tokens (the official codes use 64 tokens of
    # the LLM's tokenizer; whitespace words for an API generator). None: queries are not cut. The
    # first query of FLARE and SR/FL/FS-RAG, the question itself, is never cut.
    max_query_tokens: int | None = None
    # DRAGIN's answer rule for every method: when the finished text never says "So the answer is",
    # the phrase is appended and this many more tokens are generated. 0 turns the rule off.
    answer_retry_tokens: int = 32
    # Generation stops at any of these (the exemplars are separated by a blank line).
    stop: list[str] = field(default_factory=lambda: ["\n\n", "\nQuestion:"])

    def __post_init__(self) -> None:
        key = self.exemplars.strip().lower()
        self.exemplars = _EXEMPLAR_ALIASES.get(key, key)
        if self.exemplars not in EXEMPLAR_SETS:
            raise ValueError(f"exemplars must be one of {list(EXEMPLAR_SETS)}, got {self.exemplars!r}")
        _at_least(0, num_exemplars=self.num_exemplars, answer_retry_tokens=self.answer_retry_tokens)
        _at_least(1, top_k=self.top_k, max_new_tokens=self.max_new_tokens)
        _at_least(1, max_doc_words=self.max_doc_words, max_query_tokens=self.max_query_tokens)
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise ValueError(f"stop sequences must be non-empty strings, got {self.stop!r}")


@dataclass
class WoRAGConfig(ActiveCommon):
    """wo-RAG: the answer from the question alone."""


@dataclass
class SRRAGConfig(ActiveCommon):
    """SR-RAG: one retrieval with the question before generating."""


@dataclass
class FLRAGConfig(ActiveCommon):
    """FL-RAG: retrieve every ``window`` tokens with the previous window as the query. Neither
    paper gives the window of its main runs (DRAGIN's configs omit ``fix_length``); 16 is the
    window of FLARE's previous-window baseline (Ram et al.)."""

    window: int = 16

    def __post_init__(self) -> None:
        super().__post_init__()
        _at_least(1, window=self.window)


@dataclass
class FSRAGConfig(ActiveCommon):
    """FS-RAG: retrieve before every sentence with the previous sentence as the query. Each step
    generates up to ``step_tokens`` tokens and keeps the first sentence."""

    step_tokens: int = 64

    def __post_init__(self) -> None:
        super().__post_init__()
        _at_least(1, step_tokens=self.step_tokens)


@dataclass
class FlareConfig(ActiveCommon):
    """FLARE-direct (Jiang et al. 2023, section 3.2)."""

    num_exemplars: int = 8
    top_k: int = 2
    max_new_tokens: int = 256
    # theta: a look-ahead sentence triggers retrieval when any token's probability is below it.
    theta: float = 0.8
    # beta: query tokens below this probability are masked (masked queries) or asked about (explicit).
    beta: float = 0.4
    # Tokens generated per look-ahead; the first sentence is kept.
    look_ahead: int = 64
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
    span_gap: int = 0
    question_max_new_tokens: int = 32

    def __post_init__(self) -> None:
        super().__post_init__()
        _unit(theta=self.theta, beta=self.beta)
        _at_least(1, look_ahead=self.look_ahead, question_max_new_tokens=self.question_max_new_tokens)
        _at_least(0, span_gap=self.span_gap)


@dataclass
class FlareInstructConfig(ActiveCommon):
    """FLARE-instruct: the model writes ``[Search(query)]`` itself (FLARE section 3.1)."""

    num_exemplars: int = 8
    top_k: int = 2
    max_new_tokens: int = 256
    # Added to the logit of "[" while generating, so queries come more often (the paper: +2.0).
    search_bias: float = 2.0
    # After a query: this bias on "[" for the next ``ban_tokens`` tokens ("a large negative value
    # for the next few tokens"; the count is not in the paper).
    ban_bias: float = -100.0
    ban_tokens: int = 8
    # Vocabulary ids of "[" for the bias. Empty: found in a local model's vocabulary; an API
    # generator needs them given (they depend on the server's tokenizer).
    bracket_token_ids: list[int] = field(default_factory=list)
    initial_retrieval: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        _at_least(0, ban_tokens=self.ban_tokens)
        if not -100.0 <= self.search_bias <= 100.0 or not -100.0 <= self.ban_bias <= 100.0:
            raise ValueError("search_bias and ban_bias must lie in [-100, 100] (the OpenAI API's range)")


@dataclass
class DraginConfig(ActiveCommon):
    """DRAGIN (Su et al. 2024): RIND decides when, QFS what to retrieve."""

    # "paper": Eq. 5 per token (entropy x max attention from later tokens x stopword indicator),
    # truncate at the trigger, continue with the documents. "official": the code's word-level,
    # per-sentence-normalised scores, POS filter after the trigger, whole-sentence discard.
    variant: Literal["paper", "official"] = "paper"
    theta: float = 1.2
    # QFS: tokens (paper) / words (official) of the context kept in the query.
    top_n: int = 35
    # A JSON file from efficientrag.baselines.active.calibrate (theta = a quantile of this model's
    # first-round scores on training questions); when set, theta is taken from it. For models whose
    # score scale differs from the paper's 7B-13B models (docs/real_llm.md).
    theta_calibration: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _at_least(1, top_n=self.top_n)


@dataclass
class ActiveRAGConfig:
    flare: FlareConfig = field(default_factory=FlareConfig)
    flare_instruct: FlareInstructConfig = field(default_factory=FlareInstructConfig)
    dragin: DraginConfig = field(default_factory=DraginConfig)
    wo_rag: WoRAGConfig = field(default_factory=WoRAGConfig)
    sr_rag: SRRAGConfig = field(default_factory=SRRAGConfig)
    fl_rag: FLRAGConfig = field(default_factory=FLRAGConfig)
    fs_rag: FSRAGConfig = field(default_factory=FSRAGConfig)


def _at_least(low: int, **values: int | None) -> None:
    for name, value in values.items():
        if value is not None and value < low:
            raise ValueError(f"{name} must be >= {low}, got {value}")


def _unit(**values: float) -> None:
    for name, value in values.items():
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {value}")

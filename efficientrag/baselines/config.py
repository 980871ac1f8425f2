"""Settings of the answering methods (the EfficientRAG paper's baselines) and of the QA judge.

One sub-config per method, under ``baselines:`` in an experiment YAML. Defaults are the official
code's settings where it has them (``baseline/retrieve/*.py``: top-10 everywhere, Iter-RetGen 3
iterations, Self-Ask at most 5 follow-ups); token limits are ours (the official code leaves them to
the server's defaults).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from efficientrag.llm.config import LLMConfig

PROMPT_DATASETS = ("auto", "hotpotqa", "2wikimultihopqa", "musique", "toy", "generic")


def _positive(owner: str, **values: int | None) -> None:
    for name, value in values.items():
        if value is not None and value < 1:
            raise ValueError(f"{owner}.{name} must be >= 1, got {value}")


@dataclass
class PromptConfig:
    # Whose exemplars the prompts show: "auto" picks them per question from its dataset (toy,
    # hotpotqa, 2wikimultihopqa, musique; anything else gets the generic ones).
    dataset: str = "auto"
    # Exemplars per prompt (0-3); fewer keep prompts short for small local models.
    exemplars: int = 3
    # Send prompts as one chat user message (chat models); false sends plain text to be continued
    # (base models without a chat template). Self-Ask always continues plain text.
    chat: bool = True
    # Start the model's reply with the JSON key its prompt asks for ({"answer": ", {"thought": ",
    # {"decomposed_questions": [") as an assistant message it continues, so a small chat model writes
    # the value instead of a sentence about it (SmolLM2-135M answered "The answer to this question
    # is: ..." to 3 of 3 Direct prompts). Needs a generator that continues a final assistant message:
    # the local HF generator does; OpenAI-compatible chat APIs answer it with a new turn instead.
    # Chat prompts only (chat: true).
    prefill: bool = False

    def __post_init__(self) -> None:
        key = self.dataset.strip().lower()
        aliases = {"2wiki": "2wikimultihopqa", "2wikimqa": "2wikimultihopqa", "hotpot": "hotpotqa"}
        self.dataset = aliases.get(key, key)
        if self.dataset not in PROMPT_DATASETS:
            raise ValueError(f"prompts.dataset must be one of {list(PROMPT_DATASETS)}, got {self.dataset!r}")
        if not 0 <= self.exemplars <= 3:
            raise ValueError(f"prompts.exemplars must be between 0 and 3, got {self.exemplars}")


@dataclass
class DirectConfig:
    """Direct: the question alone, one answer call."""

    max_new_tokens: int = 128

    def __post_init__(self) -> None:
        _positive("direct", max_new_tokens=self.max_new_tokens)


@dataclass
class CoTConfig:
    """CoT: the question alone; the model reasons, then answers (one call)."""

    max_new_tokens: int = 384

    def __post_init__(self) -> None:
        _positive("cot", max_new_tokens=self.max_new_tokens)


@dataclass
class DirectRConfig:
    """Direct-R: one retrieval with the question; the answer call reads the top ``top_k`` chunks
    (the paper's Direct-R@10). Retrieval metrics are still reported at every ``eval.ks``."""

    top_k: int = 10
    max_new_tokens: int = 128

    def __post_init__(self) -> None:
        _positive("direct_r", top_k=self.top_k, max_new_tokens=self.max_new_tokens)


@dataclass
class DecomposeRConfig:
    """Decompose-R: one LLM call splits the question into sub-questions (JSON), each retrieves
    ``top_k``, one answer call reads the union."""

    top_k: int = 10
    # Sub-questions beyond this are dropped (a runaway decomposition must not cost 50 retrievals).
    max_sub_questions: int = 6
    # Chunks the answer call reads from the de-duplicated union (None: all of them).
    answer_top_k: int | None = None
    decompose_max_new_tokens: int = 256
    max_new_tokens: int = 128

    def __post_init__(self) -> None:
        _positive(
            "decompose_r",
            top_k=self.top_k,
            max_sub_questions=self.max_sub_questions,
            answer_top_k=self.answer_top_k,
            decompose_max_new_tokens=self.decompose_max_new_tokens,
            max_new_tokens=self.max_new_tokens,
        )


@dataclass
class IterRetGenConfig:
    """Iter-RetGen: ``iterations`` rounds of retrieve(question + previous generation) -> generate."""

    iterations: int = 3
    top_k: int = 10
    # What of the previous generation is appended to the question: its "thought" (the official
    # code) or the whole generated text.
    query_source: Literal["thought", "generation"] = "thought"
    max_new_tokens: int = 384

    def __post_init__(self) -> None:
        _positive(
            "iter_retgen", iterations=self.iterations, top_k=self.top_k, max_new_tokens=self.max_new_tokens
        )
        if self.query_source not in ("thought", "generation"):
            raise ValueError(
                f"iter_retgen.query_source must be thought|generation, got {self.query_source!r}"
            )


@dataclass
class SelfAskConfig:
    """Self-Ask: the model writes follow-up questions; each retrieves ``top_k`` chunks and one call
    answers it from them; after at most ``max_follow_ups`` the final answer is forced."""

    max_follow_ups: int = 5
    top_k: int = 10
    step_max_new_tokens: int = 128
    answer_max_new_tokens: int = 128
    final_max_new_tokens: int = 64

    def __post_init__(self) -> None:
        _positive(
            "self_ask",
            max_follow_ups=self.max_follow_ups,
            top_k=self.top_k,
            step_max_new_tokens=self.step_max_new_tokens,
            answer_max_new_tokens=self.answer_max_new_tokens,
            final_max_new_tokens=self.final_max_new_tokens,
        )


@dataclass
class EfficientRAGAnswerConfig:
    """EfficientRAG's one answer call (with ``eval.answer=true``): reads the kept chunks."""

    # None: every chunk the loop kept (the paper).
    answer_top_k: int | None = None
    max_new_tokens: int = 128

    def __post_init__(self) -> None:
        _positive("efficientrag", answer_top_k=self.answer_top_k, max_new_tokens=self.max_new_tokens)


@dataclass
class JudgeConfig:
    """The Acc metric: an LLM (possibly another model than the generator) says whether each
    prediction matches the gold answer. Off unless ``enabled``; responses are cached by the
    client when ``llm.cache_dir`` is set."""

    enabled: bool = False
    llm: LLMConfig = field(default_factory=LLMConfig)
    max_tokens: int = 32
    # Also judge the answers of a method's intermediate views (Iter-RetGen after iteration 2).
    include_views: bool = True
    # Have the server constrain the reply to the verdict object, for judges that do not follow the
    # instruction (SmolLM2-135M answered the question instead of judging it in 311 of 420 replies).
    # "json_schema": OpenAI structured outputs, also vLLM and llama.cpp's C++ server (the Python
    # server, llama-cpp-python 0.3, refuses it with a 500; each prediction then records that error);
    # "json_object": {"type": "json_object", "schema": ...}, which llama-cpp-python's server
    # enforces with a grammar (OpenAI-style servers then enforce JSON only); "none": the
    # instruction alone, as in the paper.
    constrain: Literal["none", "json_schema", "json_object"] = "none"

    def __post_init__(self) -> None:
        _positive("judge", max_tokens=self.max_tokens)
        if self.constrain not in ("none", "json_schema", "json_object"):
            raise ValueError(
                f"judge.constrain must be 'none', 'json_schema' or 'json_object', got {self.constrain!r}"
            )


@dataclass
class BaselinesConfig:
    prompts: PromptConfig = field(default_factory=PromptConfig)
    # Sampling temperature of every method's calls (0: greedy, the papers' setting).
    temperature: float = 0.0
    direct: DirectConfig = field(default_factory=DirectConfig)
    cot: CoTConfig = field(default_factory=CoTConfig)
    direct_r: DirectRConfig = field(default_factory=DirectRConfig)
    decompose_r: DecomposeRConfig = field(default_factory=DecomposeRConfig)
    iter_retgen: IterRetGenConfig = field(default_factory=IterRetGenConfig)
    self_ask: SelfAskConfig = field(default_factory=SelfAskConfig)
    efficientrag: EfficientRAGAnswerConfig = field(default_factory=EfficientRAGAnswerConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"baselines.temperature must be >= 0, got {self.temperature}")

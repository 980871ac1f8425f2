"""The one base of every method, and what every method returns.

Every method is built the same way: ``Method(retriever, generator, cfg, shared=...)``, where
``cfg`` is its own section of the config (``baselines.<name>``; EfficientRAG's is ``efficientrag``),
``generator`` a zero-argument callable that builds the LLM on first use (so building a method, e.g.
to check a config, loads no model; a built generator works too) and ``shared`` the settings every
method of a run may read. ``run_batch(examples) -> list[Prediction]`` does the work, so one runner
scores them all the same way. Retrieval-only methods leave ``answer`` as None unless the run asks
for answers. ``ranked`` says whether ``chunks`` is one ranked list (Direct-R: scored at several
cut-offs k) or the set an iterative method settled on (scored as a whole).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from efficientrag.baselines.prompts import PromptLibrary
from efficientrag.baselines.prompts.config import PromptConfig
from efficientrag.baselines.settings import Settings
from efficientrag.data.schema import Chunk, Example
from efficientrag.errors import OperationError, WrongTypeError
from efficientrag.llm.generator import Generator, Prompt
from efficientrag.retrieval.base import Retriever

GeneratorSource = Callable[[], Generator]


class Counters(dict):
    """Cost counters of one prediction (``llm_calls``, ``prompt_tokens``, ``completion_tokens``,
    ``retrieval_calls``, ``time_<stage>_s`` ...). A dict, so it serializes as is."""

    def add(self, key: str, value: float = 1) -> None:
        self[key] = self.get(key, 0) + value


@dataclass
class Prediction:
    example_id: str
    chunks: list[Chunk]
    answer: str | None = None
    scores: list[float] | None = None
    ranked: bool = False
    trace: dict[str, Any] = field(default_factory=dict)
    counters: Counters = field(default_factory=Counters)
    raw_output: str | None = None


class Runnable(Protocol):
    """What the runner needs: a method, or a wrapper around one (the LLM judge)."""

    name: str

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]: ...


@dataclass(frozen=True)
class SharedSettings:
    """The run's settings every method may read besides its own section."""

    # baselines.prompts: the answering prompts (their exemplars, chat or plain text, prefill).
    prompts: PromptConfig = field(default_factory=PromptConfig)
    # baselines.temperature: sampling temperature of the answering calls (0: greedy).
    temperature: float = 0.0
    # The run's dataset, canonical ("" when unknown): the active methods' "auto" exemplars follow it.
    dataset: str = ""
    # eval.ks: the cut-offs a ranked list is scored at (Direct-R retrieves to the largest).
    ks: tuple[int, ...] = ()
    # eval.answer: retrieval-only methods also make one answer call from their chunks.
    answer: bool = False


class Method(ABC):
    # The registry name (``efficientrag eval --method``); an instance's name is its run's name.
    name = "method"
    # The dataclass of its own section; ``cfg`` defaults to one with every default.
    config_class: ClassVar[type] = Settings
    # The dotted key of its section, as fingerprints and messages name it ("": ``baselines.<name>``,
    # a section the ``baselines:`` dataclass makes from the registry). :meth:`settings` reads it.
    config_key: ClassVar[str] = ""
    # Makes no LLM call unless the run asks for answers; its answering run is named "<name>_qa",
    # so the two never share an output folder.
    retrieval_only: ClassVar[bool] = False
    # The settings fields that name trained model folders, and each folder's kind ("labeler",
    # "filter", "reranker"): the folders are checked before long work and their content, not
    # their path, goes into a run's fingerprint.
    model_fields: ClassVar[dict[str, str]] = {}
    # Those of model_fields a run may leave unset (None): then no folder is read or hashed.
    optional_model_fields: ClassVar[frozenset[str]] = frozenset()
    # The papers report this method's numbers per generator model (DRAGIN's tables): a report
    # matches a run to the paper's row for the run's model.
    paper_rows_per_model: ClassVar[bool] = False

    def __init__(
        self,
        retriever: Retriever | None,
        generator: GeneratorSource | Generator | None,
        cfg: Any = None,
        *,
        shared: SharedSettings | None = None,
    ) -> None:
        self.retriever = retriever
        self.cfg = cfg if cfg is not None else self.config_class()
        self.shared = shared or SharedSettings()
        self.library = PromptLibrary(self.shared.prompts)
        if generator is not None and not hasattr(generator, "generate") and not callable(generator):
            # A positional slip (a top-k where the generator goes) would otherwise run silently
            # with the method's defaults.
            raise WrongTypeError(
                f"{type(self).__name__}: the generator must be a Generator, a callable that builds one, "
                f"or None; got {generator!r}"
            )
        self._generator_source = (lambda: generator) if hasattr(generator, "generate") else generator
        self._generator: Generator | None = None
        self.name = self.run_name(self.shared.answer)
        self.setup()

    @classmethod
    def run_name(cls, answer: bool) -> str:
        """The name a run of this method carries (its folder, its summary): ``<name>_qa`` for a
        retrieval-only method asked for answers, so the two runs never share a folder.

        Args:
            answer: Whether the run answers (``eval.answer``).
        """
        return f"{cls.name}_qa" if cls.retrieval_only and answer else cls.name

    def setup(self) -> None:  # noqa: B027 (an optional hook, empty by default)
        """What a method checks or prepares once its settings are in place (the active methods
        build their generator here, to check its capabilities before any work)."""

    @classmethod
    def settings(cls, cfg: Any) -> Any:
        """This method's own section of an experiment config: ``cfg.baselines.<name>``.

        A method whose settings live elsewhere says where by overriding this with the attribute
        (EfficientRAG: ``cfg.efficientrag``), and sets :attr:`config_key` to match.

        Args:
            cfg: an :class:`~efficientrag.experiment.config.ExperimentConfig`.

        Returns:
            The section, an instance of :attr:`config_class`.
        """
        return getattr(cfg.baselines, cls.name)

    @classmethod
    def section_key(cls) -> str:
        """The dotted key of :meth:`settings`' section (``baselines.flare``, ``efficientrag``)."""
        return cls.config_key or f"baselines.{cls.name}"

    @property
    def generator(self) -> Generator:
        if self._generator is None:
            if self._generator_source is None:
                raise OperationError(f"method {self.name} was built without a generator")
            self._generator = self._generator_source()  # type: ignore[operator]
        return self._generator

    @property
    def temperature(self) -> float:
        return self.shared.temperature

    def as_prompt(self, text: str, prefix: str = "") -> Prompt:
        """The prompt as sent. With ``prompts.prefill`` on, a chat prompt gets ``prefix`` (the start
        of the requested JSON) as an assistant message to continue, and
        :meth:`~efficientrag.baselines.cost.CostLedger.generate` puts it back in front of the reply."""
        if not self.shared.prompts.chat:
            return text
        messages = [{"role": "user", "content": text}]
        if prefix and self.shared.prompts.prefill:
            messages.append({"role": "assistant", "content": prefix})
        return messages

    @abstractmethod
    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        """One prediction per example, in order."""

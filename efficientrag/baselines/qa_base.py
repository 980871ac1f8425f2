"""What the answering methods share: a lazily built generator, the prompt library, how a prompt
text is sent (chat message or plain text) and how an answer is read from a reply."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from efficientrag.baselines.base import Prediction
from efficientrag.baselines.cost import CostLedger
from efficientrag.baselines.prompts import PromptLibrary, PromptSet
from efficientrag.data.schema import Example
from efficientrag.llm.answers import ExtractedAnswer, extract_answer_detailed
from efficientrag.llm.errors import LLMOutputError
from efficientrag.llm.generator import Generator, Prompt
from efficientrag.llm.json_output import parse_json_output

GeneratorSource = Callable[[], Generator]

# Openings of the replies the prompts ask for (used with prompts.prefill).
ANSWER_PREFIX = '{"answer": "'
THOUGHT_PREFIX = '{"thought": "'
DECOMPOSE_PREFIX = '{"decomposed_questions": ["'


class LLMMethod:
    """Base of the methods that call the generator. The generator is built on first use, so
    building a method (e.g. to check a config) loads no model."""

    name = "llm_method"

    def __init__(
        self,
        generator: GeneratorSource,
        prompts: PromptLibrary | None = None,
        *,
        chat: bool = True,
        temperature: float = 0.0,
    ) -> None:
        self._generator_source = generator
        self.prompts = prompts or PromptLibrary()
        self.chat = chat
        self.temperature = temperature

    @property
    def generator(self) -> Generator:
        return self._generator_source()

    def as_prompt(self, text: str, prefix: str = "") -> Prompt:
        """The prompt as sent. With ``prompts.prefill`` on, a chat prompt gets ``prefix`` (the start
        of the requested JSON) as an assistant message to continue, and
        :meth:`~efficientrag.baselines.cost.CostLedger.generate` puts it back in front of the reply."""
        if not self.chat:
            return text
        messages = [{"role": "user", "content": text}]
        if prefix and self.prompts.cfg.prefill:
            messages.append({"role": "assistant", "content": prefix})
        return messages


def read_answer(text: str, expected: str = "json") -> ExtractedAnswer:
    """The answer of a reply. ``expected`` is the format its prompt asked for ("json" or
    "self_ask"); a reply that ignored it still yields the best guess of the lenient extractor."""
    return extract_answer_detailed(text, "auto" if expected == "json" else expected)  # type: ignore[arg-type]


def read_json_field(text: str, key: str) -> str | None:
    """A string field of the JSON object in a reply (None when there is no such object or key)."""
    try:
        obj = parse_json_output(text, expect=dict)
    except LLMOutputError:
        return None
    value = obj.get(key)
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def answer_trace(found: ExtractedAnswer, expected: str = "json") -> dict[str, object]:
    return {"answer_source": found.source, "followed_format": found.source == expected}


def closed_book(
    method: LLMMethod,
    examples: Sequence[Example],
    render: Callable[[PromptSet, str], str],
    *,
    max_new_tokens: int,
    with_thought: bool = False,
) -> list[Prediction]:
    """One answer call per question with no retrieval (Direct, CoT), batched over questions."""
    ledger = CostLedger(len(examples))
    sets = [method.prompts.for_example(ex) for ex in examples]
    prefix = THOUGHT_PREFIX if with_thought else ANSWER_PREFIX
    prompts = [
        method.as_prompt(render(ps, ex.question), prefix) for ps, ex in zip(sets, examples, strict=True)
    ]
    gens = ledger.generate(
        method.generator,
        range(len(examples)),
        prompts,
        stage="answer",
        max_new_tokens=max_new_tokens,
        temperature=method.temperature,
    )
    out = []
    for i, (ex, ps, gen) in enumerate(zip(examples, sets, gens, strict=True)):
        found = read_answer(gen.text)
        trace: dict[str, object] = {"prompt_family": ps.dataset, "closed_book": True, **answer_trace(found)}
        if with_thought:
            trace["thought"] = read_json_field(gen.text, "thought")
        if not trace["followed_format"]:
            ledger.add(i, "format_failures")
        out.append(
            Prediction(
                example_id=ex.id,
                chunks=[],
                answer=found.answer,
                trace=trace,
                counters=ledger.counters[i],
                raw_output=gen.text,
            )
        )
    return out

"""Settings of the answering methods' prompts (``baselines.prompts``), and the dataset names
both prompt systems (the answering methods' and the active methods' exemplars) accept."""

from __future__ import annotations

from dataclasses import dataclass

from efficientrag.baselines.settings import Settings
from efficientrag.setting_fields import SettingError, bounded

PROMPT_DATASETS = ("auto", "hotpotqa", "2wikimultihopqa", "musique", "toy", "generic")
DATASET_ALIASES = {"2wiki": "2wikimultihopqa", "2wikimqa": "2wikimultihopqa", "hotpot": "hotpotqa"}


def exemplar_family(name: str) -> str:
    """A dataset name as the exemplar sets are keyed (``2wiki`` -> ``2wikimultihopqa``)."""
    key = name.strip().lower()
    return DATASET_ALIASES.get(key, key)


@dataclass
class PromptConfig(Settings):
    # Whose exemplars the prompts show: "auto" picks them per question from its dataset (toy,
    # hotpotqa, 2wikimultihopqa, musique; anything else gets the generic ones).
    dataset: str = "auto"
    # Exemplars per prompt (0-3); fewer keep prompts short for small local models.
    exemplars: int = bounded(3, low=0, high=3)
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
        self.dataset = exemplar_family(self.dataset)
        if self.dataset not in PROMPT_DATASETS:
            raise SettingError(f"dataset must be one of {list(PROMPT_DATASETS)}, got {self.dataset!r}")
        super().__post_init__()

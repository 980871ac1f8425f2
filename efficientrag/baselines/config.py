"""The ``baselines:`` section of an experiment config: the settings every answering method shares
(``prompts``, ``temperature``), the QA judge, and one sub-section per registered method
(``baselines.<name>``, the method's ``config_class``).

The per-method sub-sections are made from the registry, so registering a method is all it takes
to configure it. EfficientRAG's settings are the loop's own top-level ``efficientrag:`` section.
Defaults are the official code's settings where it has them (``baseline/retrieve/*.py``: top-10
everywhere, Iter-RetGen 3 iterations, Self-Ask at most 5 follow-ups); token limits are ours (the
official code leaves them to the server's defaults).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, make_dataclass
from typing import Literal

from efficientrag.baselines.base import Method
from efficientrag.baselines.prompts.config import PromptConfig
from efficientrag.baselines.registry import METHODS
from efficientrag.baselines.settings import Settings
from efficientrag.llm.config import LLMConfig
from efficientrag.setting_fields import bounded


@dataclass
class JudgeConfig(Settings):
    """The Acc metric: an LLM (possibly another model than the generator) says whether each
    prediction matches the gold answer. Off unless ``enabled``; responses are cached by the
    client when ``llm.cache_dir`` is set."""

    enabled: bool = False
    llm: LLMConfig = field(default_factory=LLMConfig)
    max_tokens: int = bounded(32, low=1)
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


@dataclass
class SharedSections(Settings):
    prompts: PromptConfig = field(default_factory=PromptConfig)
    # Sampling temperature of every answering method's calls (0: greedy, the papers' setting).
    temperature: float = bounded(0.0, low=0.0)
    judge: JudgeConfig = field(default_factory=JudgeConfig)


def baselines_config(methods: Mapping[str, type[Method]]) -> type:
    """The ``baselines:`` dataclass for ``methods``: the shared sections, plus one section per method
    whose settings live under ``baselines.<name>`` (its ``config_class``, with its defaults)."""
    return make_dataclass(
        "BaselinesConfig",
        [
            (name, cls.config_class, field(default_factory=cls.config_class))
            for name, cls in methods.items()
            if cls.section_key() == f"baselines.{name}"
        ],
        bases=(SharedSections,),
        namespace={"__module__": __name__, "__doc__": "Every method's settings, the prompts and the judge."},
    )


BaselinesConfig = baselines_config(METHODS)

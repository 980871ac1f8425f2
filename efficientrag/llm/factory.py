"""``make_generator(cfg)``: the one place a config turns into a :class:`Generator`."""

from __future__ import annotations

from efficientrag.errors import InvalidArgumentError
from efficientrag.llm.generator import Generator
from efficientrag.llm.generator_config import GeneratorConfig


def make_generator(cfg: GeneratorConfig) -> Generator:
    """Build the configured backend. Heavy imports (torch, transformers, openai) happen here, only
    for the backend that is used."""
    if cfg.backend == "hf":
        from efficientrag.llm.hf_generator import HFGenerator

        return HFGenerator.from_config(cfg.hf)
    if cfg.backend == "openai":
        from efficientrag.llm.openai_generator import OpenAIGenerator

        return OpenAIGenerator(cfg.openai)
    raise InvalidArgumentError(f"generator.backend must be 'hf' or 'openai', got {cfg.backend!r}")

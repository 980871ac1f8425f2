"""Settings of the answer generator (loaded with :func:`efficientrag.config.load_config`).

``backend`` picks the implementation; only that backend's section is read. A preset sets, e.g.::

    generator:
      backend: hf
      hf: {model: meta-llama/Llama-2-7b-chat-hf, dtype: bfloat16, batch_size: 8}

or ``backend: openai`` with ``openai.llm`` holding an :class:`~efficientrag.llm.config.LLMConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from efficientrag.llm.config import LLMConfig
from efficientrag.setting_fields import SPEED_ONLY, bounded, check_settings


@dataclass
class HFGeneratorConfig:
    # Local folder or hub name (resolved with efficientrag.hub.resolve_model_path).
    model: str = ""
    # A GGUF file inside ``model`` (llama.cpp's format): transformers dequantizes it into a normal
    # torch model (needs the ``gguf`` package) and builds the tokenizer from the same file, so
    # token probabilities, entropies and attention are those of the quantized checkpoint. The
    # loaded model is never saved (transformers refuses save_pretrained on it).
    gguf_file: str | None = None
    # "auto": all visible GPUs (device_map="auto"), else CPU; or an explicit "cpu", "cuda", "cuda:1", "mps".
    device: str = "auto"
    # "auto" keeps the checkpoint's dtype (bf16 for most chat models).
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"
    # None: transformers' default (SDPA) for generation. Attention is always read in an extra pass that
    # switches to "eager" for that pass only; set "eager" here for models that cannot switch at run time.
    attn_implementation: str | None = None
    # Prompts per generate() batch (left-padded); longer prompts are grouped together.
    batch_size: int = bounded(8, low=1, roles=[SPEED_ONLY])
    # Message-list prompts use the tokenizer's chat template; without one they are refused.
    use_chat_template: bool = True
    # Seed for sampled decoding (temperature > 0); greedy decoding does not use it.
    seed: int = 0
    revision: str | None = None
    trust_remote_code: bool = False

    def __post_init__(self) -> None:
        check_settings(self)


@dataclass
class OpenAIGeneratorConfig:
    llm: LLMConfig = field(default_factory=LLMConfig)
    # Usage-accounting stage name of the generator's calls.
    stage: str = "generate"
    # Raw-string prompts go to /v1/completions (vLLM, llama.cpp and OpenAI's legacy models serve it);
    # false sends them as a single user message to /v1/chat/completions instead.
    completions_for_text: bool = True
    # Entropies approximated from the top-k logprobs the server returns (a lower bound of the true
    # entropy: the tail beyond k is missing). Off by default: entropies are then "not supported".
    approximate_entropies: bool = False
    # k for that approximation (OpenAI's chat API allows at most 20).
    top_logprobs: int = bounded(20, low=1)

    def __post_init__(self) -> None:
        check_settings(self)


@dataclass
class GeneratorConfig:
    backend: Literal["hf", "openai"] = "hf"
    hf: HFGeneratorConfig = field(default_factory=HFGeneratorConfig)
    openai: OpenAIGeneratorConfig = field(default_factory=OpenAIGeneratorConfig)

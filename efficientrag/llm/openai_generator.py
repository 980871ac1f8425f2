"""An OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp) as a
:class:`~efficientrag.llm.generator.Generator`.

Message-list prompts go to ``/v1/chat/completions``; plain-string prompts, which FLARE and DRAGIN
continue as raw text, go to ``/v1/completions`` (vLLM and llama.cpp serve both; set
``completions_for_text: false`` for chat-only servers, which then get the string as one user
message). A batch of prompts runs concurrently through the client (bounded by its
``concurrency``), with its retries, cache and usage accounting; the call blocks until all are done.

Token probabilities are ``exp(logprob)`` of the returned logprobs. Many servers drop logprobs
silently when they do not support them; asking for probabilities and getting none raises
:class:`~efficientrag.llm.generator.GeneratorCapabilityError` rather than letting FLARE run
without its trigger. Entropies need the whole next-token distribution, which no API returns;
with ``approximate_entropies`` they are computed from the top-k logprobs (a lower bound, since
the tail beyond k is missing), otherwise they are reported as unsupported. Attention is never
available from an API.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from efficientrag.closing import Closing
from efficientrag.errors import InvalidArgumentError
from efficientrag.llm.client import LLMClient
from efficientrag.llm.generator import (
    Generation,
    GenerationRequest,
    GeneratorBase,
    GeneratorCapabilityError,
    GeneratorCounters,
    GeneratorSupport,
    clip_pieces,
    entropy_from_logprobs,
    is_chat_prompt,
)
from efficientrag.llm.generator_config import OpenAIGeneratorConfig
from efficientrag.llm.response import LLMResponse


class OpenAIGenerator(Closing, GeneratorBase):
    def __init__(self, cfg: OpenAIGeneratorConfig, *, client: LLMClient | None = None) -> None:
        self.cfg = cfg
        self._owns_client = client is None
        self.client = client if client is not None else LLMClient(cfg.llm)
        self.name = f"openai:{self.client.aclient.cfg.model}"
        self.counters = GeneratorCounters()
        self.supports = GeneratorSupport(
            token_probs=True,
            entropies=cfg.approximate_entropies,
            attention=False,
            chat=True,
            raw_completion=cfg.completions_for_text,
        )

    def _generate(self, req: GenerationRequest) -> list[Generation]:
        """``logit_bias`` maps token ids *of the server's tokenizer* to values in [-100, 100] added to
        their logits (OpenAI's ``logit_bias``; vLLM supports it on both endpoints)."""
        prompts = req.prompts
        if req.want_attention:
            raise GeneratorCapabilityError(
                f"attention weights were requested from {self.name}, but an OpenAI-compatible API does not "
                "expose them; DRAGIN (RIND and QFS) needs them: use a local Hugging Face model "
                "(generator.backend=hf, generator.hf.model=<path or hub name>)"
            )
        if req.want_entropies and not self.supports.entropies:
            raise GeneratorCapabilityError(
                f"per-token entropies were requested from {self.name}, but an API returns only the top "
                "logprobs, not the full distribution; DRAGIN's RIND needs them: use a local Hugging Face "
                "model, or set generator.openai.approximate_entropies=true to estimate them from the "
                f"top {self.cfg.top_logprobs} logprobs (a lower bound)"
            )
        want_logprobs = req.want_token_probs or req.want_entropies
        top_k = self.cfg.top_logprobs if req.want_entropies else None
        common = {
            "stage": self.cfg.stage,
            "max_tokens": req.max_new_tokens,
            "temperature": float(req.temperature),
            "stop": req.stops or None,
            "allow_truncated": True,
        }
        if req.logit_bias:
            common["logit_bias"] = req.logit_bias

        chat_idx = [
            i for i, p in enumerate(prompts) if is_chat_prompt(p) or not self.cfg.completions_for_text
        ]
        text_idx = [i for i in range(len(prompts)) if i not in set(chat_idx)]
        responses: dict[int, LLMResponse] = {}
        if chat_idx:
            batch = [
                list(prompts[i]) if is_chat_prompt(prompts[i]) else [{"role": "user", "content": prompts[i]}]
                for i in chat_idx
            ]
            kwargs = dict(common)
            if want_logprobs:
                kwargs.update(logprobs=True, top_logprobs=top_k)
            for i, resp in zip(chat_idx, self.client.chat_many(batch, **kwargs), strict=True):
                responses[i] = resp  # type: ignore[assignment]
        if text_idx:
            kwargs = dict(common)
            if want_logprobs:
                # k=1 rather than 0: some servers treat logprobs=0 as "off".
                kwargs["logprobs"] = top_k or 1
            batch_text = [prompts[i] for i in text_idx]
            for i, resp in zip(text_idx, self.client.complete_many(batch_text, **kwargs), strict=True):  # type: ignore[arg-type]
                responses[i] = resp  # type: ignore[assignment]

        results = [
            self._generation(responses[i], i, req.want_token_probs, req.want_entropies)
            for i in range(len(prompts))
        ]
        self.counters.add(
            calls=1,
            prompts=len(prompts),
            prompt_tokens=sum(r.prompt_tokens for r in results),
            completion_tokens=sum(r.completion_tokens for r in results),
            forward_passes=len(prompts),
        )
        return results

    def _generation(
        self, resp: LLMResponse, index: int, want_probs: bool, want_entropies: bool
    ) -> Generation:
        finish = "length" if resp.finish_reason == "length" else "stop"
        gen = Generation(
            text=resp.text,
            finish_reason=finish,
            prompt_tokens=resp.usage.prompt_tokens,
            completion_tokens=resp.usage.completion_tokens,
        )
        if not (want_probs or want_entropies):
            return gen
        if resp.logprobs is None:
            raise GeneratorCapabilityError(
                f"prompts[{index}]: the server at {self.client.aclient.base_url} returned no logprobs for model "
                f"{self.client.aclient.cfg.model!r} although they were requested (many servers drop them "
                "silently). FLARE needs per-token probabilities: use a server that returns logprobs (vLLM, "
                "OpenAI) or a local Hugging Face model (generator.backend=hf)."
            )
        entries = list(resp.logprobs)
        tokens = [e.token for e in entries]
        # Some servers return logprobs for a stop sequence the text no longer contains.
        if "".join(tokens) != resp.text and "".join(tokens).startswith(resp.text):
            tokens = clip_pieces(tokens, len(resp.text))
            entries = entries[: len(tokens)]
        gen.tokens = tokens
        if want_probs:
            gen.token_probs = [math.exp(e.logprob) if math.isfinite(e.logprob) else 0.0 for e in entries]
        if want_entropies:
            # The chosen token joins the top-k (it is usually among them already).
            gen.entropies = [
                entropy_from_logprobs(list({**e.top, e.token: e.logprob}.values())) for e in entries
            ]
        return gen

    @staticmethod
    def _check_logit_bias(logit_bias: Mapping[int, float] | None) -> dict[str, float] | None:
        """The API's form: token ids as strings, values within [-100, 100]."""
        if not logit_bias:
            return None
        out = {}
        for tok, value in logit_bias.items():
            if isinstance(tok, bool) or not isinstance(tok, int) or tok < 0:
                raise InvalidArgumentError(f"logit_bias key {tok!r} is not a token id")
            if not -100.0 <= float(value) <= 100.0:
                raise InvalidArgumentError(f"logit_bias value {value} for token {tok} is outside [-100, 100]")
            out[str(tok)] = float(value)
        return out

    def close(self) -> None:
        if self._owns_client:
            self.client.close()

"""Local ``transformers`` causal LM as a :class:`~efficientrag.llm.generator.Generator`.

The only backend that can give FLARE and DRAGIN what they read: per-token probabilities and
entropies from the raw logits, and last-layer attention.

Decoding is greedy unless ``temperature > 0``. The checkpoint's ``generation_config.json`` often
asks for sampling (``do_sample``, ``temperature``, ``top_p``, ``repetition_penalty``); DRAGIN's
official code inherits those by calling ``generate`` without ``do_sample=False``. Here the loaded
model's generation config is replaced by one that keeps only the special-token ids, so decoding
is plain argmax over the raw logits (the original is kept as ``checkpoint_generation_config``).

Probabilities and entropies come from ``generate(output_logits=True)``, i.e. the logits before
any processor or temperature, so a sampled run reports the model's own distribution. Keeping
them costs ``steps x batch x vocab`` floats on the device while a batch runs.

Attention is read in one extra forward pass over prompt + kept generated tokens (one sequence at
a time, so memory is bounded by one sequence's ``heads x seq x seq``). Generation itself keeps the
fast SDPA kernel; for that pass the model is switched to ``attn_implementation="eager"`` (the
only implementation that materialises the weights) and back. A forward hook on the *last*
attention module keeps that layer's weights and nothing else, instead of
``output_attentions=True``, which would keep every layer's ``heads x seq x seq`` tensor; the pass
also asks for ``logits_to_keep=1`` so the vocabulary projection is skipped. Verified in
``tests/llm/test_generator_hf.py``: the hooked weights equal the last layer of ``output_attentions=True``
from an eager forward pass (heads averaged and per head) to float32 precision, for Llama and Qwen2.
Measured (CPU, random 8-layer Llama, hidden 512, 8 heads, one forward pass, peak RSS growth):
seq 1024: 349 MiB with ``output_attentions=True`` vs 103 MiB with the hook; seq 2048: 1238 MiB vs
373 MiB (one layer's weights are 8 x 2048^2 x 4 B = 128 MiB; all eight layers' are 1 GiB).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from efficientrag.errors import InvalidArgumentError, OperationError
from efficientrag.hub import check_gguf, resolve_model_path
from efficientrag.llm.generator import (
    AttentionView,
    Generation,
    GenerationRequest,
    GeneratorBase,
    GeneratorCounters,
    GeneratorSupport,
    Prompt,
    check_prompts,
    clip_pieces,
    first_stop,
    is_chat_prompt,
)
from efficientrag.llm.generator_config import HFGeneratorConfig
from efficientrag.llm.hf_decoding import (
    LogitBias,
    StopStrings,
    accepts,
    common_prefix,
    eos_ids,
    last_attention_module,
    max_positions,
    neutral_generation_config,
    probs_and_entropies,
    spans,
    stop_completed_at,
)

# Prompt tokens decoded in front of the generated ones, so a leading space of the first generated
# token survives tokenizers (SentencePiece) that drop it at the start of a decode.
_DECODE_ANCHOR = 4


@dataclass
class EncodedPrompt:
    """A prompt as the model sees it: rendered text (after the chat template), ids, char spans."""

    text: str
    ids: list[int]
    offsets: list[tuple[int, int]]


class HFGenerator(GeneratorBase):
    """Batched generation with a local causal LM. Build with :meth:`from_config` or pass a loaded
    ``model`` and ``tokenizer`` (tests, notebooks); the model's ``generation_config`` is replaced by
    a neutral one (see the module docstring). Calls are serialized by a lock.

    Beyond the :class:`~efficientrag.llm.generator.Generator` protocol: :meth:`encode` (the exact
    ids and character spans a prompt becomes, for hand computations) and :meth:`attend` (attention
    over a given text with no generation)."""

    def __init__(self, model: Any, tokenizer: Any, cfg: HFGeneratorConfig | None = None) -> None:
        import torch

        self.cfg = cfg or HFGeneratorConfig()
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = f"hf:{self.cfg.model or getattr(model.config, '_name_or_path', 'model')}"
        self.counters = GeneratorCounters()
        self._lock = threading.Lock()
        self._sample_calls = 0
        self._torch = torch

        self._eos_ids = eos_ids(model, tokenizer)
        if tokenizer.pad_token_id is not None:
            self._pad_id = int(tokenizer.pad_token_id)
        elif self._eos_ids:
            self._pad_id = self._eos_ids[0]
        else:
            raise InvalidArgumentError(
                f"{self.name}: the tokenizer has neither a pad nor an end-of-sequence token"
            )
        self.checkpoint_generation_config = model.generation_config
        self.model.generation_config = neutral_generation_config(model, self._eos_ids, self._pad_id)
        self.max_positions = max_positions(model)
        self.supports = GeneratorSupport(
            token_probs=True,
            entropies=True,
            attention=True,
            chat=bool(self.cfg.use_chat_template and getattr(tokenizer, "chat_template", None)),
            raw_completion=True,
        )

    @classmethod
    def from_config(cls, cfg: HFGeneratorConfig) -> HFGenerator:
        if not cfg.model:
            raise InvalidArgumentError("generator.hf.model is empty: set a local folder or a hub model name")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = resolve_model_path(cfg.model)
        kwargs: dict[str, Any] = {"trust_remote_code": cfg.trust_remote_code, "revision": cfg.revision}
        if cfg.gguf_file:
            kwargs["gguf_file"] = check_gguf(path, cfg.gguf_file)
        tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
        if cfg.dtype != "auto":
            kwargs["dtype"] = getattr(torch, cfg.dtype)
        else:
            kwargs["dtype"] = "auto"
        if cfg.attn_implementation:
            kwargs["attn_implementation"] = cfg.attn_implementation
        device = cfg.device
        if device == "auto":
            if torch.cuda.is_available():
                kwargs["device_map"] = "auto"
                device = None
            else:
                device = "cpu"
        model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
        if device is not None:
            model = model.to(device)
        if model.config.is_encoder_decoder:
            raise InvalidArgumentError(
                f"{cfg.model}: an encoder-decoder model; the generator needs a causal (decoder-only) LM"
            )
        return cls(model, tokenizer, cfg)

    # -- prompts ------------------------------------------------------------------------------------

    def render(self, prompt: Prompt) -> str:
        """The text the model is given: a string prompt as is, a message list through the chat
        template. A list ending with an assistant message is continued (no new turn is opened),
        which is how a partial answer is extended in a chat model."""
        if not is_chat_prompt(prompt):
            return prompt  # type: ignore[return-value]
        if not self.supports.chat:
            reason = (
                "use_chat_template is off" if not self.cfg.use_chat_template else "it has no chat template"
            )
            raise InvalidArgumentError(
                f"{self.name} cannot take a chat-message prompt because {reason}; pass a plain string "
                "prompt instead (it is continued as raw text)"
            )
        messages = [dict(m) for m in prompt]
        continue_last = messages[-1]["role"] == "assistant"
        return self.tokenizer.apply_chat_template(
            messages,
            tokenize=False,
            add_generation_prompt=not continue_last,
            continue_final_message=continue_last,
        )

    def encode(self, prompt: Prompt) -> EncodedPrompt:
        text = self.render(prompt)
        # A chat template writes its own BOS; a raw string gets the tokenizer's special tokens.
        add_special = not is_chat_prompt(prompt)
        if getattr(self.tokenizer, "is_fast", False):
            enc = self.tokenizer(text, add_special_tokens=add_special, return_offsets_mapping=True)
            ids = list(enc["input_ids"])
            offsets = [(int(a), int(b)) for a, b in enc["offset_mapping"]]
        else:
            ids = list(self.tokenizer(text, add_special_tokens=add_special)["input_ids"])
            pieces = self._pieces([], ids, skip_special=False)[1]
            offsets = spans(pieces)
        if not ids:
            raise InvalidArgumentError("prompt encodes to zero tokens; give the model some text to continue")
        return EncodedPrompt(text, ids, offsets)

    # -- generation ---------------------------------------------------------------------------------

    def _generate(self, req: GenerationRequest) -> list[Generation]:
        """``logit_bias`` steers which tokens are chosen, while ``token_probs`` and ``entropies``
        stay those of the unbiased model."""
        encoded = [self.encode(p) for p in req.prompts]
        for i, enc in enumerate(encoded):
            if self.max_positions and len(enc.ids) + req.max_new_tokens > self.max_positions:
                raise InvalidArgumentError(
                    f"prompts[{i}] has {len(enc.ids)} tokens; with max_new_tokens={req.max_new_tokens} that exceeds "
                    f"the model's {self.max_positions} positions. Shorten the prompt (fewer documents or "
                    "exemplars) or lower max_new_tokens."
                )
        results: list[Generation | None] = [None] * len(encoded)
        # Similar lengths share a batch, so little compute goes to padding.
        order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i].ids))
        with self._lock:
            for start in range(0, len(order), self.cfg.batch_size):
                batch = order[start : start + self.cfg.batch_size]
                outs = self._generate_batch(
                    [encoded[i] for i in batch],
                    max_new_tokens=req.max_new_tokens,
                    stops=req.stops,
                    temperature=req.temperature,
                    want_logits=req.want_token_probs or req.want_entropies,
                    bias=req.logit_bias,
                )
                for i, (pieces, ids, probs, ents, n_completion, finish) in zip(batch, outs, strict=True):
                    text = "".join(pieces)
                    attention = None
                    if req.want_attention:
                        attention = self._attention_view(
                            encoded[i].ids + ids,
                            encoded[i].text,
                            encoded[i].offsets,
                            pieces,
                            req.per_head_attention,
                        )
                    results[i] = Generation(
                        text=text,
                        finish_reason=finish,
                        prompt_tokens=len(encoded[i].ids),
                        completion_tokens=n_completion,
                        tokens=pieces,
                        token_ids=ids,
                        token_probs=probs if req.want_token_probs else None,
                        entropies=ents if req.want_entropies else None,
                        attention=attention,
                    )
            self.counters.add(calls=1, prompts=len(encoded))
        return [r for r in results if r is not None]

    def _generate_batch(
        self,
        batch: list[EncodedPrompt],
        *,
        max_new_tokens: int,
        stops: list[str],
        temperature: float,
        want_logits: bool,
        bias: dict[int, float] | None = None,
    ) -> list[tuple[list[str], list[int], list[float], list[float], int, str]]:
        torch = self._torch
        from transformers import GenerationConfig, LogitsProcessorList, StoppingCriteriaList

        device = self._input_device()
        width = max(len(e.ids) for e in batch)
        input_ids = torch.full((len(batch), width), self._pad_id, dtype=torch.long)
        attention_mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, enc in enumerate(batch):
            input_ids[row, width - len(enc.ids) :] = torch.tensor(enc.ids)
            attention_mask[row, width - len(enc.ids) :] = 1
        sampling = temperature > 0
        gen_cfg = GenerationConfig(
            max_new_tokens=max_new_tokens,
            do_sample=sampling,
            num_beams=1,
            eos_token_id=self._eos_ids or None,
            pad_token_id=self._pad_id,
            return_dict_in_generate=True,
            output_logits=want_logits,
            use_cache=True,
        )
        if sampling:
            # Pure sampling at this temperature: no top-k / top-p truncation.
            gen_cfg.temperature = float(temperature)
            gen_cfg.top_k = 0
            gen_cfg.top_p = 1.0
        criteria = StoppingCriteriaList([StopStrings(self, stops, width)]) if stops else None
        with torch.inference_mode(), self._rng_for(sampling):
            out = self.model.generate(
                input_ids=input_ids.to(device),
                attention_mask=attention_mask.to(device),
                generation_config=gen_cfg,
                stopping_criteria=criteria,
                logits_processor=LogitsProcessorList([LogitBias(bias)]) if bias else None,
            )
        sequences = out.sequences[:, width:].tolist()
        steps = len(sequences[0]) if sequences else 0
        probs_all = ents_all = None
        if want_logits and out.logits:
            probs_all, ents_all = probs_and_entropies(torch, out.logits, out.sequences[:, width:])

        results = []
        prompt_tokens = completion_tokens = 0
        for row, enc in enumerate(batch):
            gen = sequences[row]
            content, n_done, finish = self._split_row(gen)
            full_text, pieces = self._pieces(enc.ids, content)
            cut = first_stop(full_text, stops) if stops else None
            if cut is not None:
                n_done = stop_completed_at(pieces, stops)
                pieces = clip_pieces(pieces, cut)
                finish = "stop"
            kept = len(pieces)
            probs = probs_all[row, :kept].tolist() if probs_all is not None else []
            ents = ents_all[row, :kept].tolist() if ents_all is not None else []
            results.append((pieces, content[:kept], probs, ents, n_done, finish))
            prompt_tokens += len(enc.ids)
            completion_tokens += n_done
        self.counters.add(
            prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, forward_passes=steps
        )
        return results

    def _split_row(self, gen: list[int]) -> tuple[list[int], int, str]:
        """(content ids before any end-of-sequence token, tokens the model produced, finish reason).

        A row that finished early (stop sequence) is filled with padding while the rest of the
        batch runs on; trailing padding is not the model's output."""
        eos = set(self._eos_ids)
        for j, tok in enumerate(gen):
            if tok in eos:
                return gen[:j], j + 1, "stop"
        end = len(gen)
        while end > 0 and gen[end - 1] == self._pad_id:
            end -= 1
        return gen[:end], end, "length"

    def _pieces(
        self, prefix: Sequence[int], ids: Sequence[int], *, skip_special: bool = True
    ) -> tuple[str, list[str]]:
        """Decode ``ids`` as the continuation of ``prefix``: the text, and one piece per token such
        that the pieces concatenate to the text.

        Each token's piece is the text that became final when it was added. Byte-level tokens that
        complete a multi-byte character only together get the whole character on the last of
        them (the earlier ones get ""), since partial decodes end in U+FFFD."""
        decode = self.tokenizer.decode
        anchor = list(prefix[-_DECODE_ANCHOR:])

        def text_of(n: int, anchor_ids: list[int]) -> str:
            return decode(
                anchor_ids + list(ids[:n]),
                skip_special_tokens=skip_special,
                clean_up_tokenization_spaces=False,
            )

        base = text_of(0, anchor)
        if anchor and not text_of(len(ids), anchor).startswith(base):
            anchor, base = [], ""
        texts = [text_of(n, anchor)[len(base) :] for n in range(1, len(ids) + 1)]
        final = texts[-1] if texts else ""
        pieces: list[str] = []
        done = 0
        for partial in texts:
            stable = max(done, common_prefix(partial, final))
            pieces.append(final[done:stable])
            done = stable
        if pieces:
            pieces[-1] += final[done:]
        return final, pieces

    def _check_logit_bias(self, logit_bias: Mapping[int, float] | None) -> dict[int, float] | None:
        if not logit_bias:
            return None
        vocab = self.model.get_output_embeddings().weight.shape[0]
        out = {}
        for tok, value in logit_bias.items():
            if isinstance(tok, bool) or not isinstance(tok, int) or not 0 <= tok < vocab:
                raise InvalidArgumentError(
                    f"logit_bias key {tok!r} is not a token id of {self.name} (0..{vocab - 1})"
                )
            out[tok] = float(value)
        return out

    # -- attention ----------------------------------------------------------------------------------

    def attend(self, prompts: Sequence[Prompt], *, per_head: bool = False) -> list[AttentionView]:
        """Last-layer attention over each prompt as given (no generation): for scoring a text that
        is already written, e.g. DRAGIN's attention over the generated answer alone."""
        views = []
        with self._lock:
            for prompt in check_prompts(prompts):
                enc = self.encode(prompt)
                views.append(self._attention_view(enc.ids, enc.text, enc.offsets, [], per_head))
        return views

    def _attention_view(
        self,
        ids: list[int],
        prompt_text: str,
        prompt_offsets: list[tuple[int, int]],
        pieces: list[str],
        per_head: bool,
    ) -> AttentionView:
        heads = self._last_layer_attention(ids)
        n_prompt = len(prompt_offsets)
        base = len(prompt_text)
        offsets = list(prompt_offsets) + [(base + a, base + b) for a, b in spans(pieces)]
        text = prompt_text + "".join(pieces)
        tokens = [text[a:b] for a, b in offsets]
        return AttentionView(
            weights=heads.mean(axis=0).astype(np.float32),
            token_ids=list(ids),
            tokens=tokens,
            offsets=offsets,
            text=text,
            prompt_length=n_prompt,
            per_head=heads.astype(np.float32) if per_head else None,
        )

    def _last_layer_attention(self, ids: list[int]) -> np.ndarray:
        """``[heads, seq, seq]`` attention probabilities of the last layer, from one forward pass."""
        torch = self._torch
        input_ids = torch.tensor([ids], dtype=torch.long, device=self._input_device())
        found = last_attention_module(self.model)
        kwargs: dict[str, Any] = {"use_cache": False}
        if accepts(self.model, "logits_to_keep"):
            kwargs["logits_to_keep"] = 1  # the logits are not needed; skip the big vocabulary matmul
        captured: list[Any] = []
        with torch.inference_mode(), self._eager_attention():
            if found is None:
                out = self.model(input_ids, output_attentions=True, **kwargs)
                captured.append(out.attentions[-1])
            else:
                module, index = found

                def keep(_module: Any, _args: Any, output: Any) -> None:
                    captured.append(output[index] if isinstance(output, tuple) else output)

                handle = module.register_forward_hook(keep)
                try:
                    self.model(input_ids, **kwargs)
                finally:
                    handle.remove()
        self.counters.add(attention_passes=1, attention_tokens=len(ids))
        if not captured or captured[-1] is None:
            raise OperationError(
                f"{self.name}: the last attention layer returned no weights even in eager mode; load the model "
                "with generator.hf.attn_implementation=eager"
            )
        return captured[-1][0].float().cpu().numpy()

    @contextmanager
    def _eager_attention(self) -> Iterator[None]:
        current = getattr(self.model.config, "_attn_implementation", None)
        if current == "eager":
            yield
            return
        self.model.set_attn_implementation("eager")
        try:
            yield
        finally:
            self.model.set_attn_implementation(current)

    # -- helpers ------------------------------------------------------------------------------------

    def _input_device(self) -> Any:
        return self.model.get_input_embeddings().weight.device

    @contextmanager
    def _rng_for(self, sampling: bool) -> Iterator[None]:
        """Sampled runs draw from a generator seeded by ``cfg.seed`` and the call number, without
        disturbing the global torch RNG."""
        if not sampling:
            yield
            return
        torch = self._torch
        device = self._input_device()
        devices = [device.index or 0] if device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(self.cfg.seed + self._sample_calls)
            self._sample_calls += 1
            yield

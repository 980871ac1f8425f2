"""The pieces :class:`~efficientrag.llm.hf_generator.HFGenerator` plugs into ``transformers``'
``generate``: a logits processor (logit bias), a stopping criterion (stop strings), the
probability and entropy of each chosen token, and what a loaded model says about itself (EOS ids,
context length, whether ``forward`` takes an argument, its last attention layer)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class LogitBias:
    """Adds fixed values to the logits of chosen tokens before the next token is picked."""

    def __init__(self, bias: dict[int, float]) -> None:
        self.ids = list(bias)
        self.values = list(bias.values())

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        add = torch.tensor(self.values, dtype=scores.dtype, device=scores.device)
        scores = scores.clone()
        scores[:, self.ids] += add
        return scores


class StopStrings:
    """Stopping criterion: a row is done once its generated text contains a stop sequence.

    Only the tail of each row is decoded: a stop of ``L`` characters lies within the last
    ``4 * L + 4`` tokens (a byte-level token can carry as little as one byte of a character)."""

    def __init__(self, generator: Any, stops: list[str], prompt_width: int) -> None:
        self.generator = generator
        self.stops = stops
        self.prompt_width = prompt_width
        self.tail = 4 * max(len(s) for s in stops) + 4

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        torch = self.generator._torch
        gen = input_ids[:, self.prompt_width :]
        tail = gen[:, -self.tail :].tolist()
        done = [
            any(s in self.generator.tokenizer.decode(row, skip_special_tokens=True) for s in self.stops)
            for row in tail
        ]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


def probs_and_entropies(torch: Any, logits: Sequence[Any], chosen: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per step and row: probability of the chosen token and entropy, from raw logits."""
    probs, ents = [], []
    for step, step_logits in enumerate(logits):
        logp = torch.log_softmax(step_logits.float(), dim=-1)
        p = logp.exp()
        ents.append(-(p * logp.masked_fill(p == 0, 0.0)).sum(-1))
        probs.append(p.gather(-1, chosen[:, step : step + 1].to(p.device)).squeeze(-1))
    return torch.stack(probs, 1).cpu().numpy(), torch.stack(ents, 1).cpu().numpy()


def stop_completed_at(pieces: list[str], stops: list[str]) -> int:
    """Number of tokens generated when a stop sequence first became fully visible."""
    text = ""
    for i, piece in enumerate(pieces):
        text += piece
        if any(s in text for s in stops):
            return i + 1
    return len(pieces)


def spans(pieces: Sequence[str]) -> list[tuple[int, int]]:
    spans, pos = [], 0
    for piece in pieces:
        spans.append((pos, pos + len(piece)))
        pos += len(piece)
    return spans


def common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def eos_ids(model: Any, tokenizer: Any) -> list[int]:
    ids: list[int] = []
    for source in (model.generation_config.eos_token_id, tokenizer.eos_token_id):
        if source is None:
            continue
        for tok in source if isinstance(source, (list, tuple)) else [source]:
            if int(tok) not in ids:
                ids.append(int(tok))
    return ids


def neutral_generation_config(model: Any, eos_ids: list[int], pad_id: int) -> Any:
    """A generation config with the checkpoint's special tokens and none of its decoding choices."""
    from transformers import GenerationConfig

    bos = model.generation_config.bos_token_id
    return GenerationConfig(bos_token_id=bos, eos_token_id=eos_ids or None, pad_token_id=pad_id)


def max_positions(model: Any) -> int | None:
    cfg = model.config
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(cfg, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def accepts(model: Any, param: str) -> bool:
    import inspect

    try:
        return param in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def last_attention_module(model: Any) -> tuple[Any, int] | None:
    """The module whose output carries the last layer's attention weights, and their index in its
    output tuple, from the model's own output-recording spec (``_can_record_outputs``, transformers
    5); None when the model has no such spec (then ``output_attentions=True`` is used)."""
    try:
        from transformers import PreTrainedModel
        from transformers.utils.output_capturing import OutputRecorder
    except ImportError:
        return None
    spec = None
    for module in model.modules():
        if isinstance(module, PreTrainedModel):
            spec = (getattr(module, "_can_record_outputs", None) or {}).get("attentions")
            if spec:
                break
    if not spec:
        return None
    recorders = []
    for item in spec if isinstance(spec, list) else [spec]:
        if isinstance(item, OutputRecorder):
            recorders.append(item)
        elif isinstance(item, str):
            recorders.append(OutputRecorder(target_class=None, index=1, class_name=item))
        else:
            recorders.append(OutputRecorder(target_class=item, index=1))
    matches: list[tuple[Any, int]] = []
    for name, module in model.named_modules():
        for rec in recorders:
            hit = (rec.target_class is not None and isinstance(module, rec.target_class)) or (
                rec.class_name is not None and name.endswith(rec.class_name)
            )
            if hit and rec.layer_name is not None:
                hit = f".{rec.layer_name.strip('.')}." in f".{name}."
            if hit:
                matches.append((module, rec.index))
                break
    return matches[-1] if matches else None

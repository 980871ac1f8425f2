"""The Labeler's early exit: small heads after early encoder layers that estimate the full Labeler's
own Continue probability, so a pair that cannot matter leaves there.

On CPU the encoder's layers are almost all of a Labeler pair's cost (docs/performance.md), and the
loop that contains its reranker judges several times the pairs it keeps. An exit head reads the
states after one of the encoder's layers, pooled as the tag head pools, and predicts two logits of
the full Labeler's Continue probability: its expected value and an upper quantile (it is fit on the
Labeler's outputs, :mod:`efficientrag.training.exit_head`; the Labeler itself is not changed). The
heads form a cascade, lowest layer first: a pair whose upper estimate is below the caller's
``exit_below`` leaves at that layer, with the expected estimate as its probability and no word
labels; every other pair goes on from the states already computed, so no layer runs twice for a
pair (the asymmetric early exit of early-exiting monoBERT, Xin et al. 2020). Deciding on the upper
quantile makes a leave a confident one: a shallow head, less sure, lets fewer pairs go.

The heads are saved in the Labeler folder's ``early_exit/`` subfolder (``config.json`` and
``model.safetensors``). The Labeler's own files stay as they are, so its digest does too; the heads
record the digest of the Labeler they were fit to and are refused over any other.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from efficientrag.errors import InvalidArgumentError
from efficientrag.fingerprint import folder_digest
from efficientrag.models.layers import encoder_layer_path
from efficientrag.models.modeling import MODEL_INPUTS, pool_states
from efficientrag.models.tokenization import EncodedInput, word_scores

EARLY_EXIT_DIR = "early_exit"
HEAD_FORMAT = 1
# A Continue logit's target is clipped here: past it the probability is 0 or 1 to float32.
LOGIT_CLIP = 12.0
# How far the staged encoder may differ from the whole one on the check input (float32).
SPLIT_TOLERANCE = 1e-4
MEAN, UPPER = 0, 1  # the two logits an exit head predicts


class ExitHead(nn.Module):
    """Pooled early states -> two logits of the full Labeler's Continue probability: its expected
    value and an upper quantile."""

    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.hidden = nn.Linear(width, hidden)
        self.out = nn.Linear(hidden, 2)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.out(F.gelu(self.hidden(self.norm(features))))


@dataclass
class EarlyExit:
    """Fitted exit heads, by the layer each reads.

    Attributes:
        heads: Layer -> head (float32, on the Labeler's device); a head at layer ``l`` reads the
            states after ``l`` encoder layers (1 .. depth - 1).
        pooling: How the states are pooled (the Labeler's tag-head pooling).
        quantile: The quantile the heads' upper logit was fit to.
        labeler_digest: ``folder_digest`` of the Labeler folder they were fit to ("" when fit to a
            Labeler not saved yet; saving beside a Labeler fills it in).
        fit: What the fit measured (rows, held-out error, per layer and threshold the share of
            pairs that would leave).
    """

    heads: dict[int, ExitHead]
    pooling: str
    quantile: float
    labeler_digest: str = ""
    fit: dict[str, Any] = field(default_factory=dict)

    @property
    def layers(self) -> list[int]:
        """The exit layers, lowest first."""
        return sorted(self.heads)

    def estimate(
        self, layer: int, states: torch.Tensor, attention_mask: torch.Tensor, segment_ids: torch.Tensor | None
    ) -> torch.Tensor:
        """The estimated Continue probability of each input from its states after ``layer``
        layers: (batch, 2), the expected value and the upper quantile, float32."""
        pooled = pool_states(states.float(), attention_mask, segment_ids, self.pooling)
        return torch.sigmoid(self.heads[layer](pooled))

    def to(self, device: torch.device | str) -> EarlyExit:
        """Move every head (in place); returns the heads themselves."""
        for head in self.heads.values():
            head.to(device)
        return self

    def save(self, labeler_folder: str | Path) -> Path:
        """Write the heads into ``labeler_folder/early_exit/`` and bind them to that Labeler's digest.

        Args:
            labeler_folder: The saved Labeler the heads were fit to.

        Returns:
            The ``early_exit`` folder.
        """
        from safetensors.torch import save_file

        from efficientrag.atomic import write_json_atomic

        labeler_folder = Path(labeler_folder)
        out = labeler_folder / EARLY_EXIT_DIR
        out.mkdir(parents=True, exist_ok=True)
        self.labeler_digest = folder_digest(labeler_folder)
        weights = {
            f"{layer}.{k}": v.detach().float().cpu().contiguous()
            for layer, head in self.heads.items()
            for k, v in head.state_dict().items()
        }
        save_file(weights, str(out / "model.safetensors"))
        first = self.heads[self.layers[0]]
        write_json_atomic(
            out / "config.json",
            {
                "format": HEAD_FORMAT,
                "layers": self.layers,
                "pooling": self.pooling,
                "quantile": self.quantile,
                "width": first.norm.normalized_shape[0],
                "hidden": first.hidden.out_features,
                "labeler_digest": self.labeler_digest,
                "fit": self.fit,
            },
        )
        return out


def load_early_exit(labeler_folder: str | Path, device: torch.device | str = "cpu") -> EarlyExit:
    """The exit heads saved beside a Labeler, checked to be that Labeler's.

    Args:
        labeler_folder: The Labeler's folder (the head is in its ``early_exit/``).
        device: Where to put the head.

    Returns:
        The heads.

    Raises:
        InvalidArgumentError: No heads there, or they were fit to another Labeler.
    """
    from safetensors.torch import load_file

    labeler_folder = Path(labeler_folder)
    folder = labeler_folder / EARLY_EXIT_DIR
    if not (folder / "config.json").is_file() or not (folder / "model.safetensors").is_file():
        raise InvalidArgumentError(
            f"{labeler_folder}: no early-exit heads ({EARLY_EXIT_DIR}/config.json and model.safetensors); "
            f"fit them with `{fit_command(labeler_folder)}`"
        )
    meta = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    missing = [k for k in ("format", "layers", "pooling", "quantile", "width", "hidden") if k not in meta]
    if meta.get("format") != HEAD_FORMAT or missing:
        problem = (
            f"format {meta.get('format')!r}, expected {HEAD_FORMAT}"
            if meta.get("format") != HEAD_FORMAT
            else f"missing {', '.join(missing)}"
        )
        raise InvalidArgumentError(
            f"{folder}/config.json: not early-exit heads ({problem}); fit the heads again"
        )
    digest = folder_digest(labeler_folder)
    if meta.get("labeler_digest") != digest:
        raise InvalidArgumentError(
            f"{folder}: the early-exit heads were fit to another model (digest "
            f"{meta.get('labeler_digest')!r}, this one {digest!r}); fit them again for this one"
        )
    weights = load_file(str(folder / "model.safetensors"))
    heads = {}
    for layer in meta["layers"]:
        head = ExitHead(int(meta["width"]), int(meta["hidden"]))
        prefix = f"{int(layer)}."
        head.load_state_dict(
            {k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)}, strict=True
        )
        heads[int(layer)] = head.to(device).eval()
    return EarlyExit(
        heads, str(meta["pooling"]), float(meta["quantile"]), digest, dict(meta.get("fit") or {})
    )


def fit_command(folder: str | Path) -> str:
    """The command that fits exit heads for the model saved in ``folder`` (a Labeler, or a
    cross-encoder: a sequence-classification model), for error messages."""
    try:
        config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}
    classifier = any(str(a).endswith("ForSequenceClassification") for a in config.get("architectures") or [])
    return (
        f"efficientrag train exit-head --{'cross-encoder' if classifier else 'labeler'} {folder} --data ROWS"
    )


def encoder_depth(labeler_folder: str | Path) -> int:
    """The encoder layers of a saved Labeler (its ``config.json``), without loading its weights:
    what a pair judged in full runs through.

    Args:
        labeler_folder: The Labeler's folder.
    """
    config = json.loads((Path(labeler_folder) / "config.json").read_text(encoding="utf-8"))
    return int(config["encoder_config"]["num_hidden_layers"])


def early_exit_digest(labeler_folder: str | Path) -> str:
    """The content digest of the exit heads saved beside a Labeler: what a run that lets pairs
    leave early depends on besides the Labeler itself.

    Raises:
        InvalidArgumentError: No head there.
    """
    folder = Path(labeler_folder) / EARLY_EXIT_DIR
    if not (folder / "config.json").is_file():
        raise InvalidArgumentError(
            f"{labeler_folder}: exit_threshold is set but the model has no early-exit heads "
            f"({EARLY_EXIT_DIR}/); fit them with `{fit_command(labeler_folder)}`"
        )
    return folder_digest(folder)


class _PassThrough(nn.Module):
    """Stands in for the embeddings of the second stage: its input is already the states."""

    def forward(self, *args: Any, inputs_embeds: torch.Tensor | None = None, **kwargs: Any) -> torch.Tensor:
        if inputs_embeds is None:
            raise InvalidArgumentError("the second stage of a split encoder reads inputs_embeds")
        return inputs_embeds


def with_child(module: nn.Module, dotted: str, child: nn.Module) -> nn.Module:
    """A shallow copy of ``module`` whose submodule at ``dotted`` is ``child``; every other
    submodule (and every weight) is shared with ``module``, which is left unchanged."""
    name, _, rest = dotted.partition(".")
    clone = copy.copy(module)
    clone._modules = dict(module._modules)
    clone._modules[name] = child if not rest else with_child(module._modules[name], rest, child)
    return clone


class StagedEncoder:
    """An encoder run in stages that share its weights, cut after each of ``layers``: the first
    stage reads the input ids, every later one the previous stage's states. Built per call (a few
    shallow copies), so quantization or a dtype cast of the encoder after loading is what every
    stage runs."""

    def __init__(self, backbone: nn.Module, layers: Sequence[int]) -> None:
        path = encoder_layer_path(backbone)
        blocks = list(backbone.get_submodule(path))
        depth = len(blocks)
        cuts = [int(x) for x in layers]
        if not cuts or cuts != sorted(set(cuts)) or not all(1 <= x < depth for x in cuts):
            raise InvalidArgumentError(
                f"exit layers must be increasing and in 1..{depth - 1} (the encoder has {depth}), got {cuts}"
            )
        if not isinstance(backbone._modules.get("embeddings"), nn.Module):
            raise InvalidArgumentError(
                f"{type(backbone).__name__} has no 'embeddings' module: its layers cannot be run in stages"
            )
        bounds = [0, *cuts, depth]
        self.stages = []
        for k, (start, end) in enumerate(zip(bounds, bounds[1:], strict=False)):
            stage = with_child(backbone, path, nn.ModuleList(blocks[start:end]))
            self.stages.append(stage if k == 0 else with_child(stage, "embeddings", _PassThrough()))

    def first(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The states after the first cut (``inputs``: the encoder's keyword arguments)."""
        return self.stages[0](**inputs).last_hidden_state

    def next(self, stage: int, states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Stage ``stage`` (1 .. the number of cuts) from the previous stage's states."""
        return self.stages[stage](inputs_embeds=states, attention_mask=attention_mask).last_hidden_state


def check_split(network: nn.Module, layers: Sequence[int]) -> None:
    """Refuse an encoder whose stages do not compute what it computes whole (one whose layers read
    their own index, say), on a short input of its own vocabulary.

    Args:
        network: The Labeler's network.
        layers: The exit layers (the cuts).

    Raises:
        InvalidArgumentError: The stages' last states differ from the whole encoder's.
    """
    backbone = network.backbone
    device = next(backbone.parameters()).device
    ids = torch.arange(5, 13, device=device)[None] % int(backbone.config.vocab_size)
    mask = torch.ones_like(ids)
    inputs = network.backbone_inputs(ids, mask, torch.zeros_like(ids))
    was_training = backbone.training
    backbone.eval()
    try:
        with torch.inference_mode():
            whole = backbone(**inputs).last_hidden_state.float()
            staged = StagedEncoder(backbone, layers)
            states = staged.first(inputs)
            for k in range(1, len(staged.stages)):
                states = staged.next(k, states, mask)
    finally:
        backbone.train(was_training)
    gap = float((whole - states.float()).abs().max())
    tolerance = SPLIT_TOLERANCE * max(1.0, float(whole.abs().max()))
    if not gap <= tolerance:
        raise InvalidArgumentError(
            f"{type(backbone).__name__} run in stages cut after layers {list(layers)} differs from the "
            f"whole encoder by {gap:.2e}: its layers cannot be split for an early exit"
        )


# (input index, word probabilities, Continue probability, the layer it left at or None)
ExitRun = tuple[int, list[float], float, int | None]


def run_with_exit(
    model: Any,
    early_exit: EarlyExit,
    encoded: Sequence[EncodedInput],
    *,
    exit_below: float,
    batch_size: int,
    word_aggregation: str,
) -> Iterator[ExitRun]:
    """Predict every input, letting those whose upper estimate falls below ``exit_below`` leave at
    the first exit layer where it does.

    Inputs are batched longest first for the first stage; the ones that go on are batched again,
    in the same order, for each later stage, from their stored states.

    Args:
        model: The Labeler (its network, collator and device).
        early_exit: Its fitted exit heads.
        encoded: The encoded pairs.
        exit_below: An input whose upper estimate of its Continue probability is below this leaves.
        batch_size: Inputs per forward pass (every stage).
        word_aggregation: Sub-word -> word aggregation.

    Yields:
        ``(input index, word probabilities, Continue probability, exit layer or None)`` in input order.
    """
    network = model.network
    staged = StagedEncoder(network.backbone, early_exit.layers)
    collate, device = model.collator(), model.device
    results: dict[int, tuple[list[float], float, int | None]] = {}
    # The inputs still in the encoder with their states (None before the first stage).
    going_on: list[tuple[int, torch.Tensor | None]] = [
        (i, None) for i in sorted(range(len(encoded)), key=lambda i: -len(encoded[i]))
    ]
    was_training = network.training
    network.eval()
    try:
        with torch.inference_mode():
            for stage, layer in enumerate(early_exit.layers):
                left: list[tuple[int, torch.Tensor | None]] = []
                for group, inputs, states in _stage_batches(going_on, encoded, collate, device, batch_size):
                    states = (
                        staged.first(_encoder_inputs(network, inputs))
                        if stage == 0
                        else staged.next(stage, states, inputs["attention_mask"])
                    )
                    estimate = early_exit.estimate(
                        layer, states, inputs["attention_mask"], inputs.get("segment_ids")
                    )
                    for row, i in enumerate(group):
                        if float(estimate[row, UPPER]) < exit_below:
                            results[i] = ([0.0] * encoded[i].n_words, float(estimate[row, MEAN]), layer)
                        else:
                            left.append((i, states[row, : len(encoded[i])]))
                going_on = left
            last = len(early_exit.layers)
            for group, inputs, states in _stage_batches(going_on, encoded, collate, device, batch_size):
                mask, segments = inputs["attention_mask"], inputs.get("segment_ids")
                out = network.read_heads(staged.next(last, states, mask), mask, segments)
                probs = out["token_logits"].float().softmax(-1)[..., 1]
                n_slots = max(encoded[i].n_words for i in group)
                words = word_scores(probs, inputs["word_ids"], n_slots, word_aggregation).cpu()
                tags = out["tag_logits"].float().softmax(-1)[:, 0].cpu()
                for row, i in enumerate(group):
                    results[i] = (words[row, : encoded[i].n_words].tolist(), float(tags[row]), None)
    finally:
        network.train(was_training)
    for i in range(len(encoded)):
        yield (i, *results[i])


def _stage_batches(
    going_on: list[tuple[int, torch.Tensor | None]],
    encoded: Sequence[EncodedInput],
    collate: Any,
    device: torch.device,
    batch_size: int,
) -> Iterator[tuple[list[int], dict[str, torch.Tensor], torch.Tensor | None]]:
    """Batches of the inputs still in the encoder: their indices, padded inputs (with word maps)
    and, after the first stage, their stored states padded to the batch's width."""
    for start in range(0, len(going_on), batch_size):
        chunk = going_on[start : start + batch_size]
        group = [i for i, _ in chunk]
        batch = collate([(i, encoded[i]) for i in group])
        inputs = {k: batch[k].to(device) for k in (*MODEL_INPUTS, "word_ids") if k in batch}
        width = inputs["input_ids"].shape[1]
        states = (
            None
            if chunk[0][1] is None
            else torch.stack([F.pad(s, (0, 0, 0, width - s.shape[0])) for _, s in chunk if s is not None])
        )
        yield group, inputs, states


def _encoder_inputs(network: Any, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return network.backbone_inputs(
        inputs["input_ids"], inputs["attention_mask"], inputs.get("token_type_ids")
    )

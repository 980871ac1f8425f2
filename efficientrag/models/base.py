"""What the Labeler and the Filter share: building, saving, loading and batched inference.

A model object wraps a ``transformers`` network (:class:`~efficientrag.models.network.LabelerModel`
or ``FilterModel``, whose config records everything needed to rebuild it) and its tokenizer; it is
loaded once and then called on whole batches (the pipeline never runs the network per item).

A saved folder is a standard ``transformers`` one: ``config.json``, ``model.safetensors``, the
tokenizer files and a model card (``README.md``). ``AutoModel.from_pretrained`` reads it (the
classes are registered by ``import efficientrag``), ``from_pretrained`` also takes a Hub name, and
folders in the first format (``efficientrag_model.json``) still load (:mod:`efficientrag.models.legacy`).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import torch
from tqdm.auto import tqdm
from transformers import AutoModel, PreTrainedTokenizerBase

from efficientrag.atomic import atomic_folder
from efficientrag.hub import download_model_folder, hub_offline, looks_like_repo_id, resolve_model_path
from efficientrag.models.batching import Collator
from efficientrag.models.card import (
    CARD_FILE,
    MODEL_NAME_SLOT,
    TRAIN_CONFIG_FILE,
    TrainingRecord,
    write_model_card,
)
from efficientrag.models.configuration import CONFIG_CLASSES, MODEL_TYPES, WordClassifierConfig
from efficientrag.models.encoding import EncodedInput
from efficientrag.models.network import MODEL_CLASSES, MODEL_INPUTS, TokenClassifierNetwork, align_parameters
from efficientrag.models.quantize import check_quantize_mode, is_bf16, is_quantized, quantize_network
from efficientrag.models.spec import SPEC_FILE
from efficientrag.models.tokenizer_setup import load_tokenizer
from efficientrag.models.word_scores import word_scores

if TYPE_CHECKING:
    from efficientrag.models.onnx_runtime import OnnxNetwork

M = TypeVar("M", bound="WordClassifier")

CONFIG_FILE = "config.json"
WEIGHTS_FILES = ("model.safetensors", "model.safetensors.index.json")
# What a trained folder holds about its run; it travels with the model when the model is saved again.
RUN_FILES = (CARD_FILE, TRAIN_CONFIG_FILE, "metrics.json")


class WordClassifier:
    """Base of :class:`~efficientrag.models.Labeler` and :class:`~efficientrag.models.Filter`."""

    kind: ClassVar[str] = ""
    default_max_length: ClassVar[int] = 384

    def __init__(
        self,
        network: TokenClassifierNetwork,
        tokenizer: PreTrainedTokenizerBase,
        device: str | torch.device | None = None,
    ) -> None:
        if network.config.kind != self.kind:
            raise ValueError(f"{type(self).__name__} cannot hold a {network.config.kind!r} network")
        self.network = network
        self.tokenizer = tokenizer
        self.source: Path | None = None  # the folder it was loaded from, if any
        # An ONNX Runtime session that predicts in place of ``network`` (quantize("onnx"...)).
        self.onnx: OnnxNetwork | None = None
        self.to(device)

    @property
    def config(self) -> WordClassifierConfig:
        return self.network.config

    @property
    def spec(self) -> WordClassifierConfig:
        """The config under its earlier name (it replaced ``ModelSpec``)."""
        return self.network.config

    @property
    def max_length(self) -> int:
        """Token budget the model was trained with (inputs are truncated to it by default)."""
        return int(self.network.config.max_length)

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def from_backbone(
        cls: type[M],
        name_or_path: str,
        *,
        pooling: str = "mean",
        max_length: int | None = None,
        word_aggregation: str = "first",
        dropout: float = 0.1,
        device: str | torch.device | None = None,
    ) -> M:
        """A fresh model on a pre-trained encoder (heads randomly initialized), ready to train."""
        path = resolve_model_path(name_or_path)
        local = hub_offline()
        backbone = AutoModel.from_pretrained(
            path, dtype=torch.float32, trust_remote_code=False, local_files_only=local
        )
        align_parameters(backbone)
        tokenizer = load_tokenizer(path, local_files_only=local)
        config = CONFIG_CLASSES[cls.kind](
            encoder_config=backbone.config,
            encoder_name=name_or_path,
            pooling=pooling,
            max_length=max_length or cls.default_max_length,
            word_aggregation=word_aggregation,
            dropout=dropout,
            # The encoder's config object becomes ours (nested); keep its attention implementation,
            # which building our config would otherwise reset for every nested config.
            attn_implementation=backbone.config._attn_implementation,
        )
        _check_max_length(backbone.config, config.max_length)
        network = MODEL_CLASSES[cls.kind](config, backbone=backbone)
        return cls(network, tokenizer, device)

    @classmethod
    def from_pretrained(
        cls: type[M],
        name_or_path: str | Path,
        device: str | torch.device | None = None,
        *,
        dtype: torch.dtype | str | None = None,
        revision: str | None = None,
    ) -> M:
        """Load a saved folder, or a Hub repository (``user/repo``) where the Hub is reachable or cached.

        Never runs remote code; weights are read from safetensors only.
        """
        folder = locate_model_folder(name_or_path, revision=revision)
        network = load_network(folder, cls.kind)
        if dtype is not None:
            network.to(getattr(torch, dtype) if isinstance(dtype, str) else dtype)
        tokenizer = load_tokenizer(str(folder), local_files_only=True)
        model = cls(network, tokenizer, device)
        model.source = folder
        return model

    def save_pretrained(
        self,
        folder: str | Path,
        *,
        state_dict: dict[str, torch.Tensor] | None = None,
        training: TrainingRecord | None = None,
    ) -> Path:
        """Write config, weights (safetensors), tokenizer and model card; atomically replaces ``folder``.

        ``state_dict`` lets a distributed trainer pass weights it gathered from all processes;
        ``training`` is what the training loop knows about the run, for the model card. Without it,
        a model loaded from a trained folder keeps that folder's card, config and metrics.
        A model running through ONNX Runtime saves its float torch weights, which the
        conversion left untouched.
        """
        if is_quantized(self.network) or is_bf16(self.network):
            raise ValueError(
                f"this {self.kind} was quantized for inference ({self.backend}) and cannot be saved; save "
                "the float model and quantize it again after loading"
            )
        carry = self.source if training is None and self.source is not None else None
        return write_model_folder(
            folder, self.network, self.tokenizer, state_dict=state_dict, training=training, carry_from=carry
        )

    def push_to_hub(
        self,
        repo_id: str,
        *,
        private: bool | None = None,
        token: str | None = None,
        revision: str | None = None,
    ) -> str:
        """Upload the folder :meth:`save_pretrained` writes (network, tokenizer, card) to a Hub repository.

        ``self.network.push_to_hub`` (inherited from ``transformers``) would upload config and
        weights only; a shared Labeler/Filter also needs its word-level tokenizer and card.
        Returns the commit URL.
        """
        from huggingface_hub import HfApi

        api = HfApi(token=token)
        api.create_repo(repo_id, private=private, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            folder = self.save_pretrained(Path(tmp) / "model")
            card = folder / CARD_FILE
            card.write_text(
                card.read_text(encoding="utf-8").replace(MODEL_NAME_SLOT, repo_id), encoding="utf-8"
            )
            info = api.upload_folder(
                repo_id=repo_id,
                folder_path=str(folder),
                revision=revision,
                commit_message=f"Upload efficientrag {self.kind}",
            )
        return str(info)

    # -- device ------------------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        return next(self.network.parameters()).device

    def to(self, device: str | torch.device | None) -> WordClassifier:
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if (is_quantized(self.network) or self.onnx is not None) and torch.device(device).type != "cpu":
            what = "an int8-quantized" if self.onnx is None else "an ONNX Runtime"
            raise ValueError(f"{what} {self.kind} runs on CPU only, not on {device}")
        self.network.to(device)
        return self

    def quantize(self: M, mode: str = "int8") -> M:
        """Switch to a faster CPU inference path (in place); ``mode="none"`` leaves the model as it is.

        ``"int8"`` quantizes the torch network's Linear layers and ``"bf16"`` casts it to bfloat16
        (:mod:`efficientrag.models.quantize`);
        ``"onnx"`` / ``"onnx-int8"`` predict through ONNX Runtime (fp32 / int8 weights), exported
        once into a cache and leaving the torch network float (:mod:`efficientrag.models.onnx_runtime`).
        """
        check_quantize_mode(mode)
        if mode == "none":
            return self
        if mode == "bf16":
            if self.onnx is not None or is_quantized(self.network):
                raise ValueError(
                    f"this {self.kind} already runs as {self.backend}; bf16 casts the float torch "
                    "network: load the model again to use it"
                )
            quantize_network(self.network, mode)
            return self
        if self.device.type != "cpu":
            raise ValueError(
                f"quantize={mode!r} runs on CPU only; this {self.kind} is on {self.device} (set device=cpu)"
            )
        if mode == "int8":
            if self.onnx is not None:
                raise ValueError(
                    f"this {self.kind} already predicts through ONNX Runtime ({self.onnx.mode}); "
                    "int8 applies to the torch network: load the model again to use it"
                )
            quantize_network(self.network, mode)
            return self
        if is_quantized(self.network) or is_bf16(self.network):
            state = "int8-quantized" if is_quantized(self.network) else "cast to bfloat16"
            raise ValueError(
                f"this {self.kind}'s torch network is {state}; ONNX Runtime exports the float "
                "network: load the model again"
            )
        from efficientrag.models.onnx_runtime import onnx_network

        self.onnx = onnx_network(self.network, mode)
        return self

    @property
    def backend(self) -> str:
        """What predicts: ``"torch"``, ``"torch-int8"``, ``"torch-bf16"``, ``"onnx"`` or ``"onnx-int8"``."""
        if self.onnx is not None:
            return self.onnx.mode
        if is_quantized(self.network):
            return "torch-int8"
        return "torch-bf16" if is_bf16(self.network) else "torch"

    # -- inference ---------------------------------------------------------------------------

    def collator(self, *, pad_to: int | None = None, compat_labels: bool = False) -> Collator:
        pad = self.tokenizer.pad_token_id
        if pad is None:
            raise ValueError(f"tokenizer of {self.config.encoder_name!r} has no pad token")
        return Collator(pad, pad_to=pad_to, compat_labels=compat_labels)

    def _run(
        self,
        encoded: Sequence[EncodedInput],
        *,
        batch_size: int,
        word_aggregation: str | None,
        show_progress: bool,
    ) -> Iterator[tuple[int, list[float], float | None]]:
        """Yield ``(input index, word probabilities, continue probability)`` in input order.

        Inputs are batched longest first so each batch carries little padding.
        """
        how = word_aggregation or self.config.word_aggregation
        order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i]))
        collate = self.collator()
        results: dict[int, tuple[list[float], float | None]] = {}
        was_training = self.network.training
        self.network.eval()
        device = self.device
        try:
            bar = tqdm(total=len(order), desc=f"{self.kind} predict", disable=not show_progress, unit="input")
            with torch.inference_mode():
                for start in range(0, len(order), batch_size):
                    ids = order[start : start + batch_size]
                    batch = collate([(i, encoded[i]) for i in ids])
                    inputs = {k: batch[k].to(device) for k in MODEL_INPUTS if k in batch}
                    out = self.network(**inputs) if self.onnx is None else self.onnx(inputs)
                    probs = out["token_logits"].float().softmax(-1)[..., 1]
                    n_slots = int(batch["n_words"].max())
                    words = word_scores(probs, batch["word_ids"].to(device), n_slots, how).cpu()
                    tags = out["tag_logits"].float().softmax(-1)[:, 0].cpu() if "tag_logits" in out else None
                    for row, i in enumerate(ids):
                        n = encoded[i].n_words
                        results[i] = (words[row, :n].tolist(), float(tags[row]) if tags is not None else None)
                    bar.update(len(ids))
            bar.close()
        finally:
            self.network.train(was_training)
        for i in range(len(encoded)):
            yield i, results[i][0], results[i][1]

    def _max_length(self, max_length: int | None) -> int:
        return int(max_length or self.max_length)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(backbone={self.config.encoder_name!r}, pooling={self.config.pooling!r}, "
            f"max_length={self.max_length}, device={self.device})"
        )


def _check_max_length(config: Any, max_length: int) -> None:
    """Absolute-position encoders cannot see past their position table; relative ones can."""
    limit = getattr(config, "max_position_embeddings", None)
    relative = getattr(config, "position_biased_input", True) is False
    if limit and not relative and max_length > limit:
        raise ValueError(f"max_length {max_length} exceeds the backbone's max_position_embeddings ({limit})")


def locate_model_folder(name_or_path: str | Path, *, revision: str | None = None) -> Path:
    """A local folder as is; otherwise a Hub name, fetched into (or read from) the Hub cache."""
    path = Path(name_or_path).expanduser()
    if path.exists():
        if not path.is_dir():
            raise NotADirectoryError(f"{path} is a file; a saved model is a folder")
        return path
    name = str(name_or_path)
    if not looks_like_repo_id(name):
        raise FileNotFoundError(
            f"{path} not found: no folder with {CONFIG_FILE} (or {SPEC_FILE}) there, and it is not a Hub name"
        )
    return download_model_folder(name, revision=revision)


def check_model_folder(name_or_path: str | Path, kind: str, *, revision: str | None = None) -> Path:
    """Everything about a saved ``kind`` folder that can go wrong, checked without loading it: that
    it exists, holds a ``kind`` model and complete safetensors weights. Run before long work (encoding
    a corpus) so a typo in a path fails in a second, not after an hour."""
    from efficientrag.models.legacy import is_legacy_folder

    folder = locate_model_folder(name_or_path, revision=revision)
    if not is_legacy_folder(folder):
        config_path = folder / CONFIG_FILE
        if not config_path.is_file():
            raise FileNotFoundError(
                f"{config_path} not found: {folder} is not a saved efficientrag {kind} "
                "(training writes one under its output_dir, in best/)"
            )
        saved_kind = _saved_kind(config_path, kind)
        if saved_kind != kind:
            raise ValueError(f"{folder} holds a {saved_kind!r} model, not a {kind!r} model")
    weights = [folder / f for f in WEIGHTS_FILES if (folder / f).is_file()]
    if not weights:
        raise FileNotFoundError(
            f"{folder / WEIGHTS_FILES[0]} not found (weights are read from safetensors only)"
        )
    for path in (p for p in weights if p.suffix == ".safetensors"):
        check_safetensors(path)
    return folder


def check_safetensors(path: Path) -> None:
    """A truncated or damaged weights file fails here with its path, not deep inside a loader."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as fh:
            fh.keys()
    except (SafetensorError, OSError) as err:
        raise ValueError(
            f"{path}: incomplete or corrupt safetensors file ({err}); copy it again or retrain the model"
        ) from None


def load_network(folder: Path, kind: str) -> TokenClassifierNetwork:
    """The ``kind`` network saved in ``folder`` (current or first format), in eval mode."""
    from efficientrag.models.legacy import is_legacy_folder, load_legacy_network

    if is_legacy_folder(folder):
        network = load_legacy_network(folder)
    else:
        config_path = folder / CONFIG_FILE
        if not config_path.is_file():
            raise FileNotFoundError(
                f"{config_path} not found (nor {SPEC_FILE}): {folder} is not a saved efficientrag "
                f"{kind} (save one with .save_pretrained(folder))"
            )
        saved_kind = _saved_kind(config_path, kind)
        if saved_kind != kind:
            raise ValueError(f"{folder} holds a {saved_kind!r} model, not a {kind!r} model")
        if not any((folder / f).is_file() for f in WEIGHTS_FILES):
            raise FileNotFoundError(
                f"{folder / WEIGHTS_FILES[0]} not found (weights are read from safetensors only)"
            )
        if (folder / WEIGHTS_FILES[0]).is_file():
            check_safetensors(folder / WEIGHTS_FILES[0])
        try:
            config = CONFIG_CLASSES[kind].from_pretrained(str(folder), local_files_only=True)
        except ValueError as err:
            raise ValueError(f"{config_path}: {err}") from err
        mismatch = f"{folder / WEIGHTS_FILES[0]} does not match the network described by {config_path}"
        try:
            network, info = MODEL_CLASSES[kind].from_pretrained(
                str(folder),
                config=config,
                local_files_only=True,
                use_safetensors=True,
                output_loading_info=True,
            )
        except RuntimeError as err:
            if "mismatched" not in str(err):
                raise
            raise ValueError(f"{mismatch}: tensor shapes differ") from err
        # transformers only warns about these and leaves the weights random; a shared model must not.
        wrong = {k: sorted(v)[:5] for k, v in info.items() if k != "error_msgs" and v}
        if wrong or info.get("error_msgs"):
            raise ValueError(f"{mismatch}: {wrong or info['error_msgs']}")
    if network.config.kind != kind:
        raise ValueError(f"{folder} holds a {network.config.kind!r} model, not a {kind!r} model")
    return network.eval()


def write_model_folder(
    folder: str | Path,
    network: TokenClassifierNetwork,
    tokenizer: PreTrainedTokenizerBase,
    *,
    state_dict: dict[str, torch.Tensor] | None = None,
    training: TrainingRecord | None = None,
    carry_from: Path | None = None,
) -> Path:
    """Write the folder into ``<folder>.tmp``, then swap it in, so a crash never leaves it half written.

    ``carry_from``: a folder whose run files (card, train_config.yaml, metrics.json) are copied over.
    """
    if state_dict is not None:
        state_dict = {k: v.detach().to("cpu").contiguous() for k, v in state_dict.items()}
    with atomic_folder(folder) as tmp:
        network.save_pretrained(str(tmp), state_dict=state_dict)
        tokenizer.save_pretrained(str(tmp))
        write_model_card(tmp, network.config, training)
        for name in RUN_FILES if carry_from is not None else ():
            if (carry_from / name).is_file():
                shutil.copyfile(carry_from / name, tmp / name)
    return Path(folder)


def _saved_kind(config_path: Path, kind: str) -> str:
    try:
        model_type = json.loads(config_path.read_text(encoding="utf-8")).get("model_type")
    except (json.JSONDecodeError, AttributeError) as err:
        raise ValueError(f"{config_path}: not a JSON object ({err})") from err
    if model_type not in MODEL_TYPES:
        expected = CONFIG_CLASSES[kind].model_type
        raise ValueError(
            f"{config_path}: model_type {model_type!r} is not an efficientrag model (expected {expected!r}); "
            f"to train a {kind} on this encoder use {kind.capitalize()}.from_backbone"
        )
    return MODEL_TYPES[model_type]

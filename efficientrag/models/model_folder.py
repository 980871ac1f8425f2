"""A saved Labeler/Filter folder: finding it, checking it before long work, reading and writing it.

A saved folder is a standard ``transformers`` one: ``config.json``, ``model.safetensors``, the
tokenizer files and a model card (``README.md``). ``AutoModel.from_pretrained`` reads it (the
classes are registered by ``import efficientrag``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerBase

from efficientrag.atomic import atomic_folder
from efficientrag.errors import InvalidArgumentError, MissingFileError, NotAFolderError
from efficientrag.hub import download_model_folder, looks_like_repo_id
from efficientrag.models.card import CARD_FILE, TRAIN_CONFIG_FILE, TrainingRecord, write_model_card
from efficientrag.models.configuration import CONFIG_CLASSES, MODEL_TYPES
from efficientrag.models.modeling import MODEL_CLASSES, TokenClassifierNetwork

CONFIG_FILE = "config.json"
WEIGHTS_FILES = ("model.safetensors", "model.safetensors.index.json")
# What a trained folder holds about its run; it travels with the model when the model is saved again.
RUN_FILES = (CARD_FILE, TRAIN_CONFIG_FILE, "metrics.json")


def locate_model_folder(name_or_path: str | Path, *, revision: str | None = None) -> Path:
    """A local folder as is; otherwise a Hub name, fetched into (or read from) the Hub cache."""
    path = Path(name_or_path).expanduser()
    if path.exists():
        if not path.is_dir():
            raise NotAFolderError(f"{path} is a file; a saved model is a folder")
        return path
    name = str(name_or_path)
    if not looks_like_repo_id(name):
        raise MissingFileError(
            f"{path} not found: no folder with {CONFIG_FILE} there, and it is not a Hub name"
        )
    return download_model_folder(name, revision=revision)


def check_model_folder(name_or_path: str | Path, kind: str, *, revision: str | None = None) -> Path:
    """Everything about a saved ``kind`` folder that can go wrong, checked without loading it: that
    it exists, holds a ``kind`` model in the current format and complete safetensors weights. Run
    before long work (encoding a corpus) so a typo in a path fails in a second, not after an hour."""
    folder = locate_model_folder(name_or_path, revision=revision)
    _check_saved_folder(folder, kind)
    for path in (folder / f for f in WEIGHTS_FILES if f.endswith(".safetensors")):
        if path.is_file():
            check_safetensors(path)
    return folder


def check_safetensors(path: Path) -> None:
    """A truncated or damaged weights file fails here with its path, not deep inside a loader."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as fh:
            fh.keys()
    except (SafetensorError, OSError) as err:
        raise InvalidArgumentError(
            f"{path}: incomplete or corrupt safetensors file ({err}); copy it again or retrain the model"
        ) from None


def load_network(folder: Path, kind: str) -> TokenClassifierNetwork:
    """The ``kind`` network saved in ``folder``, in eval mode; weights that do not fit are an error."""
    check_model_folder(folder, kind)
    config_path = folder / CONFIG_FILE
    try:
        config = CONFIG_CLASSES[kind].from_pretrained(str(folder), local_files_only=True)
    except ValueError as err:
        raise InvalidArgumentError(f"{config_path}: {err}") from err
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
        raise InvalidArgumentError(f"{mismatch}: tensor shapes differ") from err
    # transformers only warns about these and leaves the weights random; a shared model must not.
    wrong = {k: sorted(v)[:5] for k, v in info.items() if k != "error_msgs" and v}
    if wrong or info.get("error_msgs"):
        raise InvalidArgumentError(f"{mismatch}: {wrong or info['error_msgs']}")
    if network.config.kind != kind:
        raise InvalidArgumentError(f"{folder} holds a {network.config.kind!r} model, not a {kind!r} model")
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


def _check_saved_folder(folder: Path, kind: str) -> None:
    """The folder holds a current-format ``kind`` model and a weights file (not yet read)."""
    config_path = folder / CONFIG_FILE
    if not config_path.is_file():
        raise MissingFileError(
            f"{config_path} not found: {folder} is not a saved efficientrag {kind} (training writes one "
            "under its output_dir, in best/; .save_pretrained(folder) writes one)"
        )
    saved_kind = _saved_kind(config_path, kind)
    if saved_kind != kind:
        raise InvalidArgumentError(f"{folder} holds a {saved_kind!r} model, not a {kind!r} model")
    if not any((folder / f).is_file() for f in WEIGHTS_FILES):
        raise MissingFileError(
            f"{folder / WEIGHTS_FILES[0]} not found (weights are read from safetensors only)"
        )


def _saved_kind(config_path: Path, kind: str) -> str:
    try:
        model_type = json.loads(config_path.read_text(encoding="utf-8")).get("model_type")
    except (json.JSONDecodeError, AttributeError) as err:
        raise InvalidArgumentError(f"{config_path}: not a JSON object ({err})") from err
    if model_type not in MODEL_TYPES:
        expected = CONFIG_CLASSES[kind].model_type
        raise InvalidArgumentError(
            f"{config_path}: model_type {model_type!r} is not an efficientrag model (expected {expected!r}); "
            f"to train a {kind} on this encoder use {kind.capitalize()}.from_backbone"
        )
    return MODEL_TYPES[model_type]

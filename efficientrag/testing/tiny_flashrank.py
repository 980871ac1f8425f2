"""A tiny FlashRank model folder, built offline: a random tiny cross-encoder exported to ONNX with
the tokenizer files FlashRank's loader reads, under the name and file name FlashRank expects, so
the FlashRank path runs end to end without a download."""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch

from efficientrag.testing.tiny_backbones import tiny_cross_encoder

TINY_NAME = "ms-marco-TinyBERT-L-2-v2"


def tiny_flashrank_model(
    cache: str | Path, texts: Sequence[str], *, name: str = TINY_NAME, seed: int = 0
) -> Path:
    """``cache/<name>/``: a tiny one-logit cross-encoder as FlashRank lays out its models.

    Args:
        cache: The FlashRank cache folder.
        texts: Text the tiny tokenizer's vocabulary is built from.
        name: A pairwise model name FlashRank knows (its ONNX file is named after it).
        seed: Weight initialization.

    Returns:
        The model's folder; the saved PyTorch cross-encoder it was exported from lies beside the
        cache, in ``<cache>-torch/``, for comparisons.
    """
    from flashrank.Config import model_file_map
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    cache = Path(cache)
    source = tiny_cross_encoder(Path(f"{cache}-torch"), texts, seed=seed)
    folder = cache / name
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(str(source))
    tokenizer.model_max_length = 128
    tokenizer.save_pretrained(str(folder))
    model = AutoModelForSequenceClassification.from_pretrained(str(source)).eval()
    model.config.save_pretrained(str(folder))
    _complete_tokenizer_config(folder, tokenizer.pad_token, model.config.pad_token_id)
    batch = tokenizer([("a question", "a passage")], return_tensors="pt", return_token_type_ids=True)
    inputs = (batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            inputs,
            str(folder / model_file_map[name]),
            input_names=names,
            output_names=["logits"],
            dynamic_axes={n: {0: "batch", 1: "length"} for n in names} | {"logits": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
    return folder


def _complete_tokenizer_config(folder: Path, pad_token: str, pad_token_id: int | None) -> None:
    """The keys FlashRank's loader reads, which a saved tokenizer may leave out."""
    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config.setdefault("model_max_length", 128)
    config.setdefault("pad_token", pad_token)
    path.write_text(json.dumps(config), encoding="utf-8")
    specials = folder / "special_tokens_map.json"
    if not specials.is_file():
        specials.write_text(json.dumps({"pad_token": pad_token}), encoding="utf-8")
    model_config = folder / "config.json"
    data = json.loads(model_config.read_text(encoding="utf-8"))
    if data.get("pad_token_id") is None:
        data["pad_token_id"] = pad_token_id if pad_token_id is not None else 0
        model_config.write_text(json.dumps(data), encoding="utf-8")

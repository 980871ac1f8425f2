"""A trained cross-encoder reranker folder: sentence-transformers' ``CrossEncoder`` layout.

The ``rerank`` method and the reranker's training read and write the layout ``CrossEncoder(path)``
loads anywhere (``config.json`` of a sequence-classification model with one label, safetensors
weights, the tokenizer), so a folder trained here works in LangChain's, LlamaIndex's or Haystack's
cross-encoder rerankers too. Checked before long work (a typo in a path fails in a second, not
after a corpus is searched); loaded offline, from safetensors only, with remote code off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from efficientrag.errors import InvalidArgumentError, MissingFileError, NotAFolderError
from efficientrag.hub import download_model_folder, looks_like_repo_id
from efficientrag.models.flashrank import flashrank_folder, flashrank_model
from efficientrag.models.model_folder import CONFIG_FILE, check_safetensors

WEIGHTS_FILE = "model.safetensors"
PICKLE_WEIGHTS = ("pytorch_model.bin", "model.bin")
TRAIN_HINT = (
    "train one with `efficientrag train reranker -c configs/reranker/minilm-cpu.yaml` (its best/), "
    "or name a pretrained one by its Hub id"
)


def check_cross_encoder_folder(path: str | Path) -> Path:
    """Everything about a saved cross-encoder folder that can go wrong, checked without loading it.

    A name that is no local folder but reads as a Hub id (``cross-encoder/ms-marco-MiniLM-L-6-v2``,
    ``BAAI/bge-reranker-base``) is fetched into the Hub cache, or read from it alone when
    ``HF_HUB_OFFLINE`` is set; only its safetensors weights are fetched, never a pickle. A FlashRank
    model (``flashrank:<name>``) is its folder in FlashRank's cache
    (:func:`efficientrag.models.flashrank.flashrank_folder`).

    Args:
        path: The folder (``output_dir/best`` of a reranker training run, or any saved CrossEncoder),
            or a Hub id.

    Returns:
        The folder (for a Hub id, its snapshot in the Hub cache).

    Raises:
        FileNotFoundError: No such folder, or no ``config.json`` or weights in it.
        NotADirectoryError: ``path`` is a file.
        ValueError: The weights are pickled (never loaded) or the safetensors file is damaged.
    """
    name = flashrank_model(str(path))
    if name is not None:
        return flashrank_folder(name)
    folder = Path(path).expanduser()
    if not folder.exists() and looks_like_repo_id(str(path)):
        folder = download_model_folder(str(path))
    if not folder.exists():
        raise MissingFileError(f"{folder}: no such cross-encoder folder; {TRAIN_HINT}")
    if not folder.is_dir():
        raise NotAFolderError(f"{folder} is a file; a saved cross-encoder is a folder")
    if not (folder / CONFIG_FILE).is_file():
        raise MissingFileError(f"{folder} holds no {CONFIG_FILE}: not a saved cross-encoder; {TRAIN_HINT}")
    weights = folder / WEIGHTS_FILE
    if not weights.is_file():
        pickled = [name for name in PICKLE_WEIGHTS if (folder / name).is_file()]
        if pickled:
            raise InvalidArgumentError(
                f"{folder}: its weights are pickled ({pickled[0]}), which this package never loads; "
                f"save them as {WEIGHTS_FILE} (model.save_pretrained(folder, safe_serialization=True))"
            )
        raise MissingFileError(f"{folder} holds no {WEIGHTS_FILE}; {TRAIN_HINT}")
    check_safetensors(weights)
    return folder


def load_cross_encoder(
    path: str | Path, *, device: str | None = None, max_length: int | None = None, quantize: str = "none"
) -> Any:
    """A saved cross-encoder, ready to ``predict`` (query, passage) pairs.

    Args:
        path: The folder (checked with :func:`check_cross_encoder_folder` first).
        device: ``"cpu"``, ``"cuda"``... (None: CUDA when available).
        max_length: Tokens per pair; longer pairs are cut (None: the folder's own limit).
        quantize: ``"none"`` (float32) or ``"bf16"`` (cast to bfloat16, as the loop's
            ``quantize=bf16`` casts its models, so a comparison times both at one dtype).

    Returns:
        A ``sentence_transformers.CrossEncoder``.

    Raises:
        ValueError: An unknown ``quantize``.
    """
    if quantize not in ("none", "bf16"):
        raise InvalidArgumentError(f"a cross-encoder's quantize must be 'none' or 'bf16', got {quantize!r}")
    folder = check_cross_encoder_folder(path)
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(
        str(folder), device=device, max_length=max_length, trust_remote_code=False, local_files_only=True
    )
    if quantize == "bf16":
        import torch

        model.to(torch.bfloat16)
    return model


def score_pairs(model: Any, pairs: list[tuple[str, str]], *, batch_size: int = 64) -> list[float]:
    """A loaded cross-encoder's score of each (query, passage) pair, higher meaning more relevant.

    Args:
        model: A ``CrossEncoder`` (:func:`load_cross_encoder`).
        pairs: The (query, passage text) pairs, scored in batches of ``batch_size``.
        batch_size: Pairs per forward pass.

    Returns:
        One float per pair, in the order of ``pairs`` (empty for no pairs).
    """
    if not pairs:
        return []
    scores = model.predict(pairs, batch_size=batch_size, show_progress_bar=False)
    return [float(s) for s in scores]

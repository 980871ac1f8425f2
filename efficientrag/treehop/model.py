"""``TreeHop``: the update network with loading, saving and batched inference, like the Labeler.

A saved folder is a standard ``transformers`` one (``config.json`` + ``model.safetensors``), plus
the training run's ``train_config.yaml`` and ``metrics.json`` when it came from training.
``TreeHop.from_pretrained`` reads a folder or a Hub repository (safetensors only, no remote code);
``AutoModel.from_pretrained`` reads it too once ``efficientrag.treehop`` is imported.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from efficientrag.atomic import atomic_folder
from efficientrag.errors import InvalidArgumentError, MissingFileError
from efficientrag.models.model_folder import locate_model_folder
from efficientrag.treehop.configuration import TREEHOP_MODEL_TYPE, TreeHopConfig
from efficientrag.treehop.modeling import TreeHopNetwork

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
RUN_FILES = ("train_config.yaml", "metrics.json")


class TreeHop:
    """Next-query vectors from (query vector, chunk vector) pairs, batched, without gradients.

    Args:
        network: The update network (put in eval mode).
        device: Where to run (None: CUDA when available, else CPU).
        source: The folder the network was loaded from (saving without run files keeps that
            folder's).
    """

    def __init__(
        self, network: TreeHopNetwork, device: str | torch.device | None = None, *, source: Path | None = None
    ) -> None:
        self.network = network.eval()
        self.source = source
        self.to(device)

    @classmethod
    def new(cls, config: TreeHopConfig, device: str | torch.device | None = None) -> TreeHop:
        """A randomly initialized network (seed torch first for a reproducible one).

        Args:
            config: The network's widths and encoder.
            device: Where to run (None: CUDA when available, else CPU).

        Returns:
            The untrained model.
        """
        return cls(TreeHopNetwork(config), device)

    @property
    def config(self) -> TreeHopConfig:
        """The network's config: its widths and the encoder it runs over."""
        return self.network.config

    @property
    def device(self) -> torch.device:
        """The device the network's weights are on."""
        return next(self.network.parameters()).device

    def to(self, device: str | torch.device | None) -> TreeHop:
        """Move the network to a device (in place).

        Args:
            device: The device (None: CUDA when available, else CPU).

        Returns:
            The model itself, for chaining.
        """
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.network.to(device)
        return self

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | Path,
        device: str | torch.device | None = None,
        *,
        revision: str | None = None,
    ) -> TreeHop:
        """Load a saved folder, or a Hub repository; never runs remote code, reads safetensors only.

        Args:
            name_or_path: A folder written by :meth:`save_pretrained` (or training), or a Hub name.
            device: Where to run (None: CUDA when available, else CPU).
            revision: The Hub revision to fetch.

        Returns:
            The loaded model; ``source`` is the folder it came from.

        Raises:
            FileNotFoundError: No such folder, or it lacks ``config.json`` or the safetensors weights.
            ValueError: The folder holds another model type, or weights that do not fit its config.
        """
        folder = locate_model_folder(name_or_path, revision=revision)
        config_path = folder / CONFIG_FILE
        if not config_path.is_file():
            raise MissingFileError(f"{config_path} not found: {folder} is not a saved TreeHop model")
        try:
            model_type = json.loads(config_path.read_text(encoding="utf-8")).get("model_type")
        except (json.JSONDecodeError, AttributeError) as err:
            raise InvalidArgumentError(f"{config_path}: not a JSON object ({err})") from err
        if model_type != TREEHOP_MODEL_TYPE:
            raise InvalidArgumentError(
                f"{config_path}: model_type {model_type!r} is not a TreeHop model ({TREEHOP_MODEL_TYPE!r})"
            )
        if not (folder / WEIGHTS_FILE).is_file():
            raise MissingFileError(
                f"{folder / WEIGHTS_FILE} not found (weights are read from safetensors only)"
            )
        try:
            config = TreeHopConfig.from_pretrained(str(folder), local_files_only=True)
        except ValueError as err:
            raise InvalidArgumentError(f"{config_path}: {err}") from err
        network, info = TreeHopNetwork.from_pretrained(
            str(folder), config=config, local_files_only=True, use_safetensors=True, output_loading_info=True
        )
        wrong = {k: sorted(v)[:5] for k, v in info.items() if k != "error_msgs" and v}
        if wrong or info.get("error_msgs"):
            raise InvalidArgumentError(
                f"{folder / WEIGHTS_FILE} does not match the network described by {config_path}: "
                f"{wrong or info['error_msgs']}"
            )
        return cls(network, device, source=folder)

    def save_pretrained(
        self,
        folder: str | Path,
        *,
        state_dict: dict[str, torch.Tensor] | None = None,
        run_files: dict[str, Any] | None = None,
    ) -> Path:
        """Write config and weights (safetensors) into ``<folder>.tmp``, then swap it in.

        ``run_files``: name -> text of files to write beside them (training writes its config and
        metrics); without it, a model loaded from a trained folder keeps that folder's run files.

        Args:
            folder: The folder to write (replaced whole).
            state_dict: Weights to save in place of the network's own.
            run_files: File name -> text to write beside the weights.

        Returns:
            The folder.
        """
        if state_dict is not None:
            state_dict = {k: v.detach().to("cpu").contiguous() for k, v in state_dict.items()}
        with atomic_folder(folder) as tmp:
            self.network.save_pretrained(str(tmp), state_dict=state_dict)
            if run_files is not None:
                for name, text in run_files.items():
                    (tmp / name).write_text(text, encoding="utf-8")
            elif self.source is not None:
                for name in RUN_FILES:
                    if (self.source / name).is_file():
                        shutil.copyfile(self.source / name, tmp / name)
        return Path(folder)

    def update(self, queries: np.ndarray, chunks: np.ndarray, *, batch_size: int = 4096) -> np.ndarray:
        """The next (un-normalized) query for each (query, chunk) row, float32.

        Args:
            queries: Query vectors, ``(n, dim)``.
            chunks: The retrieved chunks' vectors, ``(n, dim)``, row for row.
            batch_size: Rows per forward pass.

        Returns:
            ``(n, dim)`` next-query vectors.

        Raises:
            ValueError: The two arrays are not of the same ``(n, dim)`` shape.
        """
        queries = np.asarray(queries, dtype=np.float32)
        chunks = np.asarray(chunks, dtype=np.float32)
        if queries.shape != chunks.shape or queries.ndim != 2:
            raise InvalidArgumentError(
                f"queries {queries.shape} and chunks {chunks.shape} must both be (n, dim)"
            )
        out = np.empty_like(queries)
        device = self.device
        with torch.inference_mode():
            for start in range(0, len(queries), batch_size):
                q = torch.from_numpy(queries[start : start + batch_size]).to(device)
                c = torch.from_numpy(chunks[start : start + batch_size]).to(device)
                out[start : start + batch_size] = self.network(q, c).float().cpu().numpy()
        return out

    def num_parameters(self) -> int:
        """The network's parameter count (the paper's checkpoint: 25.2M).

        Returns:
            The count.
        """
        return sum(p.numel() for p in self.network.parameters())

    def __repr__(self) -> str:
        c = self.config
        return (
            f"TreeHop(encoder={c.encoder_name!r}, embed_dim={c.embed_dim}, gate_dim={c.gate_dim}, "
            f"heads={c.num_heads}, blocks={c.num_blocks}, device={self.device})"
        )

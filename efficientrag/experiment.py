"""One experiment = one YAML: data, retriever, evaluation and method settings, under one work dir.

``corpus``, ``index``, ``eval`` and ``retrieve`` all read this config, so a preset written once
runs every step, and each step reuses what the previous one wrote under ``work_dir``:

    work_dir/data/            pooled corpus + examples (``efficientrag corpus``)
    work_dir/index/<name>/    retriever index           (``efficientrag index``)
    work_dir/eval/<method>/   predictions, summary, table (``efficientrag eval``)
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from efficientrag.atomic import write_json_atomic
from efficientrag.baselines.config import BaselinesConfig
from efficientrag.baselines.registry import METHODS, check_method_name, registered_name
from efficientrag.config import ConfigError, to_dict
from efficientrag.data.config import DataConfig
from efficientrag.data.corpus import Corpus
from efficientrag.data.loader import load_data, load_prepared, report_skipped, save_prepared
from efficientrag.data.pooling import PooledDataset
from efficientrag.data.schema import Example
from efficientrag.fingerprint import file_digest, folder_digest
from efficientrag.llm.generator_config import GeneratorConfig
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.retrieval.base import Retriever
from efficientrag.retrieval.config import RetrieverConfig
from efficientrag.treehop.config import TreeHopRetrievalConfig

if TYPE_CHECKING:
    from efficientrag.baselines.base import GeneratorSource, Runnable, SharedSettings
    from efficientrag.retrieval.base import Retriever

log = logging.getLogger(__name__)

DATA_CONFIG_FILE = "data_config.json"


@dataclass
class EvalSettings:
    method: str = "direct_r"
    ks: list[int] = field(default_factory=lambda: [2, 4, 6, 10, 20])
    limit: int | None = None
    batch_size: int = 32
    resume: bool = True
    # Output subfolder under work_dir/eval (default: the method name).
    name: str | None = None
    # Evaluate only these question ids / never these (one id per line, e.g. training questions).
    ids_file: str | None = None
    exclude_ids_file: str | None = None
    # Retrieval-only methods (direct_r, efficientrag) also make one answer call from their chunks.
    answer: bool = False
    # Exit non-zero when more questions than this fail (their reasons are in errors.jsonl).
    max_failures: int = 0
    # Stop the run when its first N questions all fail with the same error (0: never stop early).
    fail_fast_after: int = 3
    # When another process is writing the run folder: wait for it (true) or refuse (false, `--wait`).
    wait_for_lock: bool = False

    def __post_init__(self) -> None:
        if self.max_failures < 0 or self.fail_fast_after < 0:
            raise ValueError(
                f"max_failures and fail_fast_after must be >= 0, got {self.max_failures}, {self.fail_fast_after}"
            )


@dataclass
class ExperimentConfig:
    work_dir: str = "runs/toy"
    data: DataConfig = field(default_factory=DataConfig)
    retriever: RetrieverConfig = field(default_factory=RetrieverConfig)
    eval: EvalSettings = field(default_factory=EvalSettings)
    efficientrag: EfficientRAGConfig = field(default_factory=EfficientRAGConfig)
    # TreeHop's model and search settings (``--method treehop``; needs a dense retriever).
    treehop: TreeHopRetrievalConfig = field(default_factory=TreeHopRetrievalConfig)
    # The one LLM every answering method uses (Direct, CoT, ..., EfficientRAG's answer call).
    generator: GeneratorConfig = field(default_factory=GeneratorConfig)
    # Every method's settings (baselines.<method>: top-k, iterations, thresholds, look-ahead ...), the
    # answering prompts and the QA judge; EfficientRAG's are the loop's own section above.
    baselines: BaselinesConfig = field(default_factory=BaselinesConfig)

    # Keys of earlier versions: loading one fails naming the key that replaced it.
    moved_keys: ClassVar[dict[str, str]] = {
        "active": "baselines",
        "baselines.efficientrag.answer_top_k": "efficientrag.answer_top_k",
        "baselines.efficientrag.max_new_tokens": "efficientrag.answer_max_new_tokens",
        "baselines.efficientrag": "efficientrag",
    }

    @property
    def data_dir(self) -> Path:
        return Path(self.work_dir) / "data"

    @property
    def index_dir(self) -> Path:
        if self.retriever.index_dir:
            return Path(self.retriever.index_dir)
        return Path(self.work_dir) / "index" / index_name(self.retriever)

    def eval_dir(self, method: str | None = None) -> Path:
        return Path(self.work_dir) / "eval" / (self.eval.name or method or self.eval.method)


def index_name(cfg: RetrieverConfig) -> str:
    if cfg.kind in ("bm25", "milvus"):
        return cfg.kind
    encoder = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(cfg.encoder.rstrip("/")).name)
    dense = f"dense-{encoder}-{cfg.index_type}"
    return f"hybrid-{dense}-bm25" if cfg.kind == "hybrid" else dense


def prepare_data(cfg: ExperimentConfig, *, rebuild: bool = False) -> PooledDataset:
    """Load the pooled data written by an earlier step when it was built from the same data
    settings and the same file contents; otherwise read the dataset files, pool them and save the
    result. An edited question or corpus file is read again even under the same path."""
    out = cfg.data_dir
    marker = out / DATA_CONFIG_FILE
    saved = _read_marker(marker)
    files = source_file_digests(cfg.data, saved.get("files", {}) if saved else {})
    wanted = {"config": to_dict(cfg.data), "files": files, "corpus": corpus_files(cfg.data)}
    if not rebuild and saved is not None and saved == wanted:
        pooled = load_prepared(out)
    else:
        if saved is not None:
            _refuse_another_corpus(cfg, saved, wanted)
        pooled = load_data(cfg.data)
        save_prepared(pooled, out)
        write_json_atomic(marker, wanted, indent=2)
    report_skipped(pooled, out / "skipped.jsonl")
    return pooled


class WorkDirInUseError(ValueError):
    """A work folder already holds another corpus's data (and perhaps its index and runs)."""


def corpus_files(data: DataConfig) -> list[str]:
    """The files the pooled corpus is read from: a ``jsonl`` dataset's corpus file, a benchmark
    file's own paragraphs, and any extra corpus (none for the toy world, which generates its own)."""
    out = []
    for src in data.sources():
        if src.path and src.dataset not in ("jsonl", "toy"):
            out.append(str(src.path))
        if src.corpus_path:
            out.append(str(src.corpus_path))
    return out


def _refuse_another_corpus(cfg: ExperimentConfig, saved: dict[str, Any], wanted: dict[str, Any]) -> None:
    """Stop before anything under ``work_dir`` is overwritten when it was prepared from other corpus
    files (not the same file edited, nor a copy of it moved elsewhere): its index and runs belong
    to that corpus, and `--rebuild` would destroy them."""
    before, now = saved.get("corpus") or [], wanted["corpus"]
    if sorted(before) == sorted(now):
        return
    if before and now and _contents(before, saved.get("files", {})) == _contents(now, wanted["files"]):
        return  # the same corpus under another path
    was = ", ".join(before) or "the toy world"
    reads = ", ".join(now) or "the toy world"
    own = f"--work-dir {default_work_dir(now[0])}" if now else "--work-dir runs/toy"
    raise WorkDirInUseError(
        f"{cfg.work_dir} holds the data (and any index and runs) of {was}; this command reads {reads}. "
        f"Nothing was changed. Give it a folder of its own ({own}), or delete {cfg.work_dir} to replace "
        "what it holds"
    )


def _contents(paths: list[str], files: dict[str, Any]) -> list[str]:
    return sorted(str((files.get(p) or {}).get("sha256", p)) for p in paths)


def default_work_dir(path: str | Path) -> str:
    """The folder a user's own file's runs go to: ``runs/<stem>-<8 hex of its absolute path>``.

    Two corpora called ``corpus.jsonl`` in different folders never share (and overwrite) one data
    folder and index, while ``index``, ``retrieve`` and ``eval`` over one file keep finding each
    other's work, edits of the file included (the index then says it is stale).

    Args:
        path: the corpus file (or, without one, the question file).

    Returns:
        The folder, relative to the working directory, as a string for a ``work_dir=`` override.
    """
    resolved = Path(path).expanduser().resolve()
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", resolved.stem) or "data"
    digest = hashlib.sha256(str(resolved).encode("utf-8")).hexdigest()[:8]
    return f"runs/{stem}-{digest}"


def source_file_digests(data: DataConfig, known: dict[str, Any]) -> dict[str, Any]:
    """Content hash of every local file the data settings read. A file whose size and modification
    time match ``known`` keeps its recorded hash (no re-read of a large unchanged file)."""
    out: dict[str, Any] = {}
    for src in data.sources():
        for path in (src.path, src.corpus_path):
            if not path or not Path(path).is_file():
                continue
            stat = Path(path).stat()
            seen = known.get(str(path))
            if (
                isinstance(seen, dict)
                and seen.get("size") == stat.st_size
                and seen.get("mtime_ns") == stat.st_mtime_ns
            ):
                out[str(path)] = seen
            else:
                out[str(path)] = {
                    "size": stat.st_size,
                    "mtime_ns": stat.st_mtime_ns,
                    "sha256": file_digest([path]),
                }
    return out


def _read_marker(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def search_backend(cfg: ExperimentConfig, corpus: Corpus | None) -> Retriever:
    """The experiment's retriever: a local index is loaded or built over ``corpus``; a Milvus
    collection is opened (filling one is `efficientrag index`'s job), and checked to have been
    filled from ``corpus`` when one is given (see :func:`search_corpus`)."""
    from efficientrag.retrieval.factory import build_retriever, load_retriever

    if cfg.retriever.kind == "milvus":
        return load_retriever(cfg.retriever, corpus, cfg.index_dir, corpus_name=corpus_label(cfg.data))
    if corpus is None:
        raise ValueError(f"retriever.kind={cfg.retriever.kind} needs the corpus to build or check its index")
    return build_retriever(cfg.retriever, corpus, cfg.index_dir)


def search_corpus(cfg: ExperimentConfig) -> Corpus | None:
    """The corpus a command that only asks questions (``retrieve``, ``serve``) searches.

    A local index is built over the prepared corpus. A Milvus collection holds its own chunks, so
    no dataset is read to ask it a question; but a corpus file the data settings name (``--corpus``)
    is read, and the collection must have been filled from it: ignoring it would answer from
    another corpus without a word. ``retriever.milvus.foreign_collection`` skips that check (and
    the read).

    Args:
        cfg: The experiment config.

    Returns:
        The corpus, or None for a Milvus collection searched as it is.
    """
    if cfg.retriever.kind != "milvus":
        return prepare_data(cfg).corpus
    named = any(src.corpus_path for src in cfg.data.sources())
    return prepare_data(cfg).corpus if named and not cfg.retriever.milvus.foreign_collection else None


def corpus_label(data: DataConfig) -> str:
    """How errors name the corpus of the data settings: its files, or the toy world."""
    return " + ".join(corpus_files(data)) or f"the toy world (data.dataset={data.dataset})"


def select_examples(cfg: ExperimentConfig, examples: list[Example]) -> list[Example]:
    """Apply ``eval.ids_file``, ``eval.exclude_ids_file`` and ``eval.limit`` (in that order)."""
    selected = examples
    if cfg.eval.ids_file:
        keep = _read_ids(cfg.eval.ids_file)
        selected = [ex for ex in selected if ex.id in keep]
    if cfg.eval.exclude_ids_file:
        drop = _read_ids(cfg.eval.exclude_ids_file)
        selected = [ex for ex in selected if ex.id not in drop]
    if cfg.eval.limit is not None:
        selected = selected[: cfg.eval.limit]
    return selected


def model_folders(cfg: ExperimentConfig, method: str) -> dict[str, str]:
    """The trained model folders a method reads (checked before long work, hashed into its runs),
    by kind: the folders its settings name in the fields its class lists in ``model_fields``."""
    cls = METHODS.get(registered_name(method))
    if cls is None or not cls.model_fields:
        return {}
    section = cls.settings(cfg)
    missing = [name for name in cls.model_fields if not getattr(section, name)]
    if registered_name(method) == "efficientrag" and missing:
        raise ConfigError(
            "EfficientRAG needs trained models: set efficientrag.labeler and efficientrag.filter "
            "(--labeler/--filter) to the folders written by `efficientrag train labeler|filter` (their best/)"
        )
    if missing:
        names = " and ".join(f"{cls.section_key()}.{name}" for name in missing)
        raise ConfigError(f"{cls.name} needs trained models: set {names} to a trained folder (its best/)")
    return {kind: getattr(section, name) for name, kind in cls.model_fields.items()}


def check_model_folders(cfg: ExperimentConfig, method: str) -> dict[str, str]:
    """Fail on a missing or damaged model folder now, before a corpus is encoded; returns each
    folder's content hash."""
    from efficientrag.models.cross_encoder import check_cross_encoder_folder
    from efficientrag.models.model_folder import check_model_folder

    cls = METHODS.get(registered_name(method))
    fields = {kind: name for name, kind in cls.model_fields.items()} if cls is not None else {}
    out = {}
    for kind, path in model_folders(cfg, method).items():
        try:
            folder = (
                check_cross_encoder_folder(path) if kind == "reranker" else check_model_folder(path, kind)
            )
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise FileNotFoundError(f"{cls.section_key()}.{fields[kind]}: {exc}") from None
        out[kind] = folder_digest(folder)
    return out


def build_method(
    name: str, cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource
) -> Runnable:
    """The method registered as ``name`` (any spelling: ``Direct-R`` = ``direct_r``), built from its
    own section of ``cfg`` and the run's shared settings, and judged for Acc when
    ``baselines.judge.enabled``."""
    from efficientrag.eval.judge import maybe_judged

    cls = METHODS[check_method_name(name)]
    return maybe_judged(
        cfg.baselines.judge, cls(retriever, generator, cls.settings(cfg), shared=shared_settings(cfg))
    )


def shared_settings(cfg: ExperimentConfig) -> SharedSettings:
    from efficientrag.baselines.base import SharedSettings
    from efficientrag.data.readers.registry import canonical_dataset_name

    try:
        dataset = canonical_dataset_name(cfg.data.dataset)
    except ValueError:
        dataset = ""
    return SharedSettings(
        prompts=cfg.baselines.prompts,
        temperature=cfg.baselines.temperature,
        dataset=dataset,
        ks=tuple(cfg.eval.ks),
        answer=cfg.eval.answer,
    )


def _read_ids(path: str) -> set[str]:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"question id file not found: {p}")
    return {line.strip() for line in p.read_text(encoding="utf-8").splitlines() if line.strip()}

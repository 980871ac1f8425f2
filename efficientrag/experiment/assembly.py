"""How an evaluated run is assembled from an experiment config: its search backend, its
questions, the trained model folders it reads and the method itself.

The commands (``eval``, ``retrieve``, ``serve``), the evaluation runner and the benchmarks all
build a run through these functions, so a method is built the same way wherever it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from efficientrag.baselines.registry import METHODS, check_method_name, registered_name
from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Example
from efficientrag.errors import ConfigError, InvalidArgumentError, MissingFileError
from efficientrag.experiment.config import ExperimentConfig
from efficientrag.experiment.prepared_data import corpus_label, prepare_data
from efficientrag.fingerprint import folder_digest
from efficientrag.retrieval.base import Retriever

if TYPE_CHECKING:
    from efficientrag.baselines.base import GeneratorSource, Runnable, SharedSettings


def search_backend(cfg: ExperimentConfig, corpus: Corpus | None) -> Retriever:
    """The experiment's retriever: a local index is loaded or built over ``corpus``; a Milvus
    collection is opened (filling one is `efficientrag index`'s job), and checked to have been
    filled from ``corpus`` when one is given (see :func:`search_corpus`)."""
    from efficientrag.retrieval.factory import backend_of, build_retriever, load_retriever

    if backend_of(cfg.retriever.kind).holds_chunks:
        return load_retriever(cfg.retriever, corpus, cfg.index_dir, corpus_name=corpus_label(cfg.data))
    if corpus is None:
        raise InvalidArgumentError(
            f"retriever.kind={cfg.retriever.kind} needs the corpus to build or check its index"
        )
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
    from efficientrag.retrieval.factory import backend_of

    if not backend_of(cfg.retriever.kind).holds_chunks:
        return prepare_data(cfg).corpus
    named = any(src.corpus_path for src in cfg.data.sources())
    return prepare_data(cfg).corpus if named and not cfg.retriever.milvus.foreign_collection else None


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
    optional = cls.optional_model_fields
    named = {n: kind for n, kind in cls.model_fields.items() if n not in optional or getattr(section, n)}
    missing = [name for name in named if not getattr(section, name)]
    if registered_name(method) == "efficientrag" and missing:
        raise ConfigError(
            "EfficientRAG needs trained models: set efficientrag.labeler and efficientrag.filter "
            "(--labeler/--filter) to the folders written by `efficientrag train labeler|filter` (their best/)"
        )
    if missing:
        names = " and ".join(f"{cls.section_key()}.{name}" for name in missing)
        raise ConfigError(f"{cls.name} needs trained models: set {names} to a trained folder (its best/)")
    return {kind: getattr(section, name) for name, kind in named.items()}


def check_model_folders(cfg: ExperimentConfig, method: str) -> dict[str, str]:
    """Fail on a missing or damaged model folder now, before a corpus is encoded; returns each
    folder's content hash."""
    cls = METHODS.get(registered_name(method))
    fields = {kind: name for name, kind in cls.model_fields.items()} if cls is not None else {}
    out = {}
    for kind, path in model_folders(cfg, method).items():
        try:
            out[kind] = model_digest(kind, path)
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise MissingFileError(f"{cls.section_key()}.{fields[kind]}: {exc}") from None
    section = cls.settings(cfg) if cls is not None and out else None
    if getattr(section, "exit_threshold", None) is not None:
        # The exit heads beside the scorer decide which pairs leave early: the run depends on them.
        from efficientrag.models.cross_encoder import check_cross_encoder_folder
        from efficientrag.models.early_exit import early_exit_digest

        folders = model_folders(cfg, method)
        if "labeler" in out:
            out["early_exit"] = early_exit_digest(folders["labeler"])
        elif "reranker" in out:
            out["early_exit"] = early_exit_digest(check_cross_encoder_folder(folders["reranker"]))
    return out


def model_digest(kind: str, path: str) -> str:
    """The content hash of a model a method reads, its folder checked first: a reranker's may be a
    Hub id or a FlashRank name, resolved to the folder that is loaded.

    Args:
        kind: ``labeler``, ``filter`` or ``reranker``.
        path: The setting's value.

    Raises:
        FileNotFoundError, NotADirectoryError: No such model folder, or an incomplete one.
    """
    from efficientrag.models.cross_encoder import check_cross_encoder_folder
    from efficientrag.models.model_folder import check_model_folder

    folder = check_cross_encoder_folder(path) if kind == "reranker" else check_model_folder(path, kind)
    return folder_digest(folder)


def build_method(
    name: str, cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource
) -> Runnable:
    """The method registered as ``name`` (any spelling: ``Direct-R`` = ``direct_r``), built from its
    own section of ``cfg`` and the run's shared settings, and judged for Acc when
    ``baselines.judge.enabled``."""
    from efficientrag.baselines.judge import maybe_judged

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
        raise MissingFileError(f"question id file not found: {p}")
    return {line.strip() for line in p.read_text(encoding="utf-8").splitlines() if line.strip()}


def toy_world_search(seed: int, num_questions: int, work_dir: str | Path) -> tuple[list[Example], Retriever]:
    """A generated toy world's questions and the default (MiniLM dense) search over its corpus, the
    index kept under ``work_dir/toy-seed<seed>-n<num_questions>``: the worlds the toy benchmarks
    choose settings on (one seed) and report on (another), none of them the quickstart's.

    Args:
        seed: The world's seed (the quickstart's is 0).
        num_questions: Questions generated.
        work_dir: Where its data and index go.
    """
    from efficientrag.data.config import DataConfig, ToyWorldConfig

    exp = ExperimentConfig(
        work_dir=str(Path(work_dir) / f"toy-seed{seed}-n{num_questions}"),
        data=DataConfig(dataset="toy", toy=ToyWorldConfig(seed=seed, num_questions=num_questions)),
    )
    pooled = prepare_data(exp)
    return list(pooled.examples), search_backend(exp, pooled.corpus)

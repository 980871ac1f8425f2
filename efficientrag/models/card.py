"""The model card (``README.md``) written into every saved Labeler/Filter folder.

A folder shared on the Hub is read by people who did not train it: the card says what the model
does, which encoder it sits on, how it was trained (data, settings, the command) and how well it
did on its validation split. The training loop passes what it knows as a :class:`TrainingRecord`;
a model saved outside the loop gets a card that says its training was not recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from efficientrag.hub import looks_like_repo_id
from efficientrag.models.configuration import WordClassifierConfig

CARD_FILE = "README.md"
TRAIN_CONFIG_FILE = "train_config.yaml"
# Where the usage snippet names the model; ``push_to_hub`` puts the repository id there.
MODEL_NAME_SLOT = "<this folder or Hub repo>"

PURPOSE = {
    "labeler": (
        "the **Labeler/Tagger** of EfficientRAG: given a query and a retrieved chunk, it marks the chunk "
        "words that answer the query (token head: {token}) and decides whether the chunk leads on to "
        "another hop (tag head: {tag})."
    ),
    "filter": (
        "the **Filter** of EfficientRAG: given `Query: … Info: …` (the query and the words the Labeler "
        "kept), it keeps the words that form the next-hop query (token head: {token})."
    ),
}

# Training settings shown in the card, in this order (the full config is in train_config.yaml).
SHOWN_SETTINGS = (
    "learning_rate",
    "epochs",
    "max_steps",
    "batch_size",
    "grad_accumulation",
    "warmup_steps",
    "weight_decay",
    "mixed_precision",
    "compat",
    "class_weights",
    "seed",
)


@dataclass
class TrainingRecord:
    """What the training loop knows when it saves a model.

    Attributes:
        train_config: The run's full resolved training config (as plain data).
        metrics: Evaluation of the saved weights on the validation split.
        step: The optimizer step the weights are from.
        total_steps: The run's planned number of steps (None: unknown).
        data: Rows read: ``train_rows``, ``validation_rows``, ``skipped_rows``.
        selection_metric: The metric the best checkpoint was chosen by ("": not said).
        completed: Whether the run had finished when the folder was saved.
    """

    train_config: dict[str, Any]
    metrics: dict[str, Any]  # evaluation of the saved weights (validation split)
    step: int
    total_steps: int | None = None
    data: dict[str, Any] = field(default_factory=dict)  # rows read, skipped, truncation
    selection_metric: str = ""
    completed: bool = False


def render_model_card(config: WordClassifierConfig, training: TrainingRecord | None = None) -> str:
    kind = config.kind
    title = "Labeler" if kind == "labeler" else "Filter"
    lines = [*_front_matter(config), "", f"# EfficientRAG {title}", ""]
    lines.append(
        "This is "
        + PURPOSE[kind].format(token=_pair(config.token_labels), tag=_pair(config.tag_labels or []))
        + " Together they run multi-hop retrieval with no LLM call per hop "
        "([EfficientRAG](https://arxiv.org/abs/2408.04259), reproduced by the `efficientrag` package)."
    )
    lines += ["", "## Model", "", "| setting | value |", "| --- | --- |"]
    enc = config.encoder_config
    rows = {
        "backbone": f"`{config.encoder_name or 'unknown'}`",
        "encoder": f"{enc.model_type}, hidden size {getattr(enc, 'hidden_size', '?')}, "
        f"{getattr(enc, 'num_hidden_layers', '?')} layers"
        if enc is not None
        else "missing",
        "max_length (tokens)": str(config.max_length),
        "sub-word to word scores": config.word_aggregation,
        "token labels": _pair(config.token_labels),
    }
    if config.has_tag_head:
        rows["tag-head pooling"] = config.pooling
        rows["tag labels"] = _pair(config.tag_labels or [])
    lines += [f"| {k} | {v} |" for k, v in rows.items()]
    lines += ["", "## Usage", "", "```python", *_usage(kind), "```", ""]
    lines += _training_section(kind, training)
    return "\n".join(lines).rstrip() + "\n"


def write_model_card(
    folder: str | Path, config: WordClassifierConfig, training: TrainingRecord | None = None
) -> Path:
    path = Path(folder) / CARD_FILE
    path.write_text(render_model_card(config, training), encoding="utf-8")
    return path


def _front_matter(config: WordClassifierConfig) -> list[str]:
    lines = ["---", "library_name: transformers", "tags:", "- efficientrag", f"- {config.kind}"]
    lines += ["- multi-hop-retrieval", "- token-classification"]
    # Only a Hub name can be linked as the base model; a local path means nothing on the Hub.
    name = config.encoder_name
    if name and looks_like_repo_id(name) and not Path(name).exists():
        lines.append(f"base_model: {name}")
    lines.append("---")
    return lines


def _usage(kind: str) -> list[str]:
    cls = "Labeler" if kind == "labeler" else "Filter"
    call = (
        'labeler.predict([(["Where", "was", "Alaric", "born", "?"], ["Alaric", "was", "born", "in", "Vantmoor", "."])])'
        if kind == "labeler"
        else 'filter.predict([["Query", ":", "Where", "was", "he", "born", "?", "Info", ":", "Alaric"]])'
    )
    var = kind
    return [
        f"from efficientrag import {cls}",
        "",
        f'{var} = {cls}.from_pretrained("{MODEL_NAME_SLOT}")',
        call,
        "",
        "# The network alone, through transformers' Auto classes (registered by `import efficientrag`):",
        "import efficientrag",
        "from transformers import AutoModel",
        "",
        f'network = AutoModel.from_pretrained("{MODEL_NAME_SLOT}")',
    ]


def _training_section(kind: str, training: TrainingRecord | None) -> list[str]:
    if training is None:
        return [
            "## Training",
            "",
            "Not recorded: this folder was saved outside efficientrag's training loop.",
        ]
    cfg = training.train_config
    data = training.data
    lines = ["## Training data", ""]
    source = cfg.get("data_dir") or "unknown"
    lines.append(
        f"`{source}` (`train.jsonl` / `validation.jsonl`: efficientrag {kind} rows, as `efficientrag synth` "
        "writes them)."
    )
    if data:
        lines += [
            "",
            f"Rows: {data.get('train_rows', '?')} training, {data.get('validation_rows', '?')} validation, "
            f"{data.get('skipped_rows', 0)} skipped as malformed.",
        ]
    lines += ["", "## Training settings", "", "| setting | value |", "| --- | --- |"]
    lines += [f"| {k} | {cfg[k]} |" for k in SHOWN_SETTINGS if k in cfg]
    steps = f"{training.step}" + (f" of {training.total_steps}" if training.total_steps else "")
    state = "run completed" if training.completed else "run in progress when saved"
    lines += ["", f"## Metrics (validation split, step {steps}; {state})", ""]
    if training.selection_metric:
        lines.append(f"Kept as the best checkpoint by `{training.selection_metric}`.")
        lines.append("")
    lines += ["| metric | value |", "| --- | --- |"]
    lines += [f"| {k} | {_num(v)} |" for k, v in training.metrics.items() if k != "step"]
    lines += [
        "",
        "## Reproduce",
        "",
        f"`{TRAIN_CONFIG_FILE}` in this folder is the run's full resolved config:",
        "",
        "```bash",
        f"accelerate launch train/{kind}.py --config {TRAIN_CONFIG_FILE}",
        "```",
    ]
    return lines


def _pair(names: Any) -> str:
    return " / ".join(f"`{n}`" for n in names) if names else "none"


def _num(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)

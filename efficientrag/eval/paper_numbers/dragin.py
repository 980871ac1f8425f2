"""DRAGIN's Tables 2-3 (Su et al., ACL 2024): EM/F1 and retrieval calls per generator model.

Methods are keyed as registered here (``wo_rag``, ``sr_rag``, ``fl_rag``, ``fs_rag``, ``flare``,
``dragin``); datasets as the readers name them, plus ``iirc`` and ``strategyqa``. The variant is the
generator, as :func:`model_variant` derives it from a Hugging Face model name. Metrics: ``em`` and
``f1`` in percent (DRAGIN prints fractions; StrategyQA's accuracy is the exact match of yes/no,
stored as ``em``), Table 3 as ``retrieval_calls`` per question.
"""

from __future__ import annotations

import re

from efficientrag.eval.paper_numbers.schema import PaperNumber, table

DRAGIN = "DRAGIN (Su et al., ACL 2024)"

MODELS = {
    "llama2-13b-chat": "Llama2-13b-chat",
    "llama2-7b-chat": "Llama2-7b-chat",
    "vicuna-13b-v1.5": "Vicuna-13b-v1.5",
}
_SETTING = "{model}, BM25 (Elasticsearch) over DPR psgs_w100, top-3, first 1000 questions (IIRC: 954)"

# DRAGIN Table 2 (EM / F1 as fractions; StrategyQA accuracy), columns 2WMQA, HotpotQA, StrategyQA, IIRC.
_TABLE_2 = {
    "llama2-13b-chat": {
        "wo_rag": "0.187 0.2721 | 0.223 0.3097 | 0.650 | 0.168 0.2039",
        "sr_rag": "0.245 0.3364 | 0.263 0.3706 | 0.654 | 0.196 0.2303",
        "fl_rag": "0.217 0.3054 | 0.177 0.2682 | 0.648 | 0.155 0.1875",
        "fs_rag": "0.270 0.3610 | 0.267 0.3715 | 0.655 | 0.171 0.2061",
        "flare": "0.224 0.3076 | 0.180 0.2756 | 0.655 | 0.138 0.1667",
        "dragin": "0.304 0.3931 | 0.314 0.4238 | 0.689 | 0.185 0.2221",
    },
    "llama2-7b-chat": {
        "wo_rag": "0.146 0.2232 | 0.184 0.2745 | 0.659 | 0.139 0.1731",
        "sr_rag": "0.169 0.2549 | 0.164 0.2499 | 0.645 | 0.187 0.2258",
        "fl_rag": "0.112 0.1922 | 0.146 0.2107 | 0.635 | 0.172 0.2023",
        "fs_rag": "0.189 0.2652 | 0.214 0.3035 | 0.629 | 0.178 0.2157",
        "flare": "0.143 0.2134 | 0.149 0.2208 | 0.627 | 0.136 0.1644",
        "dragin": "0.220 0.2926 | 0.232 0.3344 | 0.641 | 0.192 0.2336",
    },
    "vicuna-13b-v1.5": {
        "wo_rag": "0.146 0.2232 | 0.228 0.3256 | 0.682 | 0.175 0.2149",
        "sr_rag": "0.170 0.2564 | 0.254 0.3531 | 0.686 | 0.217 0.2564",
        "fl_rag": "0.135 0.2133 | 0.187 0.3039 | 0.645 | 0.0985 0.1285",
        "fs_rag": "0.188 0.2625 | 0.185 0.3216 | 0.622 | 0.1027 0.1344",
        "flare": "0.157 0.2257 | 0.092 0.1808 | 0.599 | 0.1174 0.1469",
        "dragin": "0.252 0.3516 | 0.288 0.4164 | 0.687 | 0.2233 0.2652",
    },
}

# DRAGIN Table 3: retrieval calls per question, columns 2WMQA, HotpotQA, StrategyQA, IIRC.
_TABLE_3 = {
    "llama2-13b-chat": {
        "fl_rag": "3.770 3.194 3.626 3.426",
        "fs_rag": "3.131 4.583 4.885 4.305",
        "flare": "1.592 3.378 0.625 5.521",
        "dragin": "2.631 3.505 4.786 2.829",
    },
    "llama2-7b-chat": {
        "fl_rag": "3.342 3.809 3.757 2.839",
        "fs_rag": "3.833 4.152 4.546 4.210",
        "flare": "0.941 1.064 1.271 1.095",
        "dragin": "2.836 3.013 4.629 2.927",
    },
    "vicuna-13b-v1.5": {
        "fl_rag": "4.199 3.564 3.591 3.189",
        "fs_rag": "3.720 5.701 6.820 6.032",
        "flare": "1.093 1.078 1.118 0.335",
        "dragin": "2.542 3.184 3.744 3.120",
    },
}


def _percent(cells: str) -> str:
    """Fractions to percent, keeping the row's separators."""
    return re.sub(r"\d+\.\d+", lambda m: f"{100 * float(m.group()):.4g}", cells)


def _dragin_table_2() -> tuple[PaperNumber, ...]:
    out: list[PaperNumber] = []
    for model, rows in _TABLE_2.items():
        setting = _SETTING.format(model=MODELS[model])
        # StrategyQA has one column (accuracy): expand it as em with a blank f1.
        expanded = {}
        for method, cells in rows.items():
            wmqa, hqa, sqa, iirc = (part.strip() for part in cells.split("|"))
            expanded[(method, model)] = _percent(f"{wmqa} | {hqa} | {sqa} - | {iirc}")
        out += table(
            paper=DRAGIN,
            table="Table 2",
            setting=setting,
            datasets=("2wikimultihopqa", "hotpotqa", "strategyqa", "iirc"),
            metrics=("em", "f1"),
            rows=expanded,
        )
    return tuple(out)


def _dragin_table_3() -> tuple[PaperNumber, ...]:
    out: list[PaperNumber] = []
    for model, rows in _TABLE_3.items():
        out += table(
            paper=DRAGIN,
            table="Table 3",
            setting=_SETTING.format(model=MODELS[model]) + "; mean retrieval calls per question",
            datasets=("2wikimultihopqa", "hotpotqa", "strategyqa", "iirc"),
            metrics=("retrieval_calls",),
            rows={(method, model): cells for method, cells in rows.items()},
        )
    return tuple(out)


DRAGIN_TABLE_2 = _dragin_table_2()
DRAGIN_TABLE_3 = _dragin_table_3()

NUMBERS: tuple[PaperNumber, ...] = DRAGIN_TABLE_2 + DRAGIN_TABLE_3


def model_variant(model: str) -> str:
    """The DRAGIN variant key of a generator (``meta-llama/Llama-2-13b-chat-hf`` ->
    ``llama2-13b-chat``); "" for a model the paper did not use."""
    name = model.rstrip("/").rsplit("/", 1)[-1].lower().replace("-hf", "")
    name = name.replace("llama-2", "llama2")
    return name if name in MODELS else ""

"""The EfficientRAG paper's Tables 2-4 (retrieval, QA, cost).

Watch the metric names: the EfficientRAG paper's "EM" is computed by its code as "normalized
prediction is a substring of the normalized gold answer", i.e. our ``contained``, so its EM column
is stored under ``contained``.
"""

from __future__ import annotations

from efficientrag.eval.paper_numbers.schema import PaperNumber, table

EFFICIENTRAG = "EfficientRAG (Zhuang et al., EMNLP 2024)"
_DATASETS = ("hotpotqa", "musique", "2wikimultihopqa")

EFFICIENTRAG_TABLE_2 = table(
    paper=EFFICIENTRAG,
    table="Table 2",
    setting="Contriever-MSMARCO over each dataset's pooled dev contexts; K = average chunks retrieved",
    datasets=_DATASETS,
    metrics=("recall", "num_chunks"),
    rows={
        ("direct_r", "@10"): "70.52 10 | 50.86 10 | 61.58 10",
        ("direct_r", "@20"): "74.87 20 | 57.12 20 | 65.24 20",
        ("direct_r", "@30"): "77.05 30 | 60.67 30 | 66.91 30",
        ("decompose_r", ""): "74.38 21.31 | 67.23 19.74 | 71.02 21.24",
        ("iter_retgen", "iter2"): "81.69 14.44 | 57.74 14.82 | 73.80 14.95",
        ("iter_retgen", "iter3"): "83.05 16.42 | 58.26 17.19 | 74.29 17.32",
        ("self_ask", ""): "73.42 35.27 | 60.43 32.36 | 88.90 33.68",
        ("efficientrag", ""): "81.84 6.41 | 49.51 6.09 | 84.08 3.69",
    },
)

EFFICIENTRAG_TABLE_3 = table(
    paper=EFFICIENTRAG,
    table="Table 3",
    setting="Llama-3-8B-Instruct generator; EM printed by the paper = our 'contained'; Acc by a Llama-3-70B judge",
    datasets=_DATASETS,
    metrics=("contained", "f1", "acc"),
    rows={
        ("direct", ""): "22.87 26.94 25.79 | 5.59 8.76 5.51 | 27.33 31.11 28.67",
        ("cot", ""): "27.99 34.05 30.53 | 10.16 13.85 9.21 | 29.25 35.14 31.71",
        ("direct_r", "@10"): "38.24 44.55 44.56 | 13.39 18.14 17.12 | 26.18 31.88 32.70",
        ("decompose_r", ""): "36.15 42.68 46.31 | 12.59 19.25 19.53 | 25.22 31.44 32.53",
        ("iter_retgen", "iter2"): "55.45 59.47 59.29 | 26.95 29.15 26.28 | 43.85 49.96 49.22",
        ("iter_retgen", "iter3"): "56.76 60.89 57.56 | 28.20 30.31 25.31 | 43.07 49.83 46.59",
        ("self_ask", ""): "33.58 39.10 42.36 | 24.56 29.22 26.97 | 47.56 54.84 55.16",
        ("efficientrag", ""): "50.59 57.93 57.86 | 16.44 21.18 20.00 | 44.18 51.64 53.41",
    },
)

EFFICIENTRAG_TABLE_4 = table(
    paper=EFFICIENTRAG,
    table="Table 4",
    setting="200 MuSiQue questions, Llama-3-8B-Instruct on GPU; latency in seconds per question",
    datasets=("musique",),
    metrics=("llm_calls", "latency_s"),
    rows={
        ("direct", ""): "1.00 2.16",
        ("direct_r", "@10"): "1.00 2.47",
        ("iter_retgen", "iter3"): "3.00 9.68",
        ("self_ask", ""): "7.18 27.47",
        ("efficientrag", ""): "1.00 3.62",
    },
)

NUMBERS: tuple[PaperNumber, ...] = EFFICIENTRAG_TABLE_2 + EFFICIENTRAG_TABLE_3 + EFFICIENTRAG_TABLE_4

"""Active retrieval-augmented generation: FLARE, DRAGIN and DRAGIN's baselines (wo-RAG, SR-RAG,
FL-RAG, FS-RAG) on one generate-retrieve-continue loop.

Every method here writes a chain-of-thought answer ending in "So the answer is ..." after
few-shot exemplars, and differs only in *when* it retrieves and *what* it asks for. The shared
pieces live in this package (settings, exemplars, prompt layout, sentence splitting, the batched
driver, per-question cost accounting); each method's decision rule lives in its own module under
:mod:`efficientrag.baselines` (``flare.py``, ``dragin.py``, ``wo_rag.py``, ``sr_rag.py``,
``fl_rag.py``, ``fs_rag.py``). ``docs/active_rag.md`` states every formula as implemented.
"""

"""The EfficientRAG retrieval loop (``efficientrag.py``), its settings (``config.py``), its use as an
evaluation method (``method.py``), trace printing (``trace_format.py``) and the LangChain adapter
(``langchain.py``, optional extra)."""

"""efficientrag: multi-hop retrieval without per-hop LLM calls."""

__version__ = "0.1.0"

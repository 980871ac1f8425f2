"""Retrieval backends behind one batched interface: ``search(queries, k) -> list[list[Hit]]``."""

from efficientrag.retrieval.base import Hit, Retriever

__all__ = ["Hit", "Retriever"]

"""The package's encoder as a LangChain ``Embeddings`` / LlamaIndex ``BaseEmbedding``.

A vector store built with these embeds passages and queries exactly as the package's own dense
index does (same model, normalization and prefixes), so a framework store and FAISS Flat give the
same neighbours: what makes a framework backend comparable with the built-in ones.
"""

from __future__ import annotations

from typing import Any

from efficientrag.retrieval.encoder import Encoder


def langchain_embeddings(encoder: Encoder) -> Any:
    from langchain_core.embeddings import Embeddings

    class EncoderEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return encoder.encode_passages(texts, show_progress=False).tolist()

        def embed_query(self, text: str) -> list[float]:
            return encoder.encode_queries([text])[0].tolist()

    return EncoderEmbeddings()


def llamaindex_embedding(encoder: Encoder) -> Any:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from pydantic import PrivateAttr

    class EncoderEmbedding(BaseEmbedding):
        _encoder: Any = PrivateAttr()

        def __init__(self, **kw: Any) -> None:
            super().__init__(model_name=encoder.name, **kw)
            self._encoder = encoder

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._encoder.encode_queries([query])[0].tolist()

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._encoder.encode_passages([text], show_progress=False)[0].tolist()

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return self._encoder.encode_passages(texts, show_progress=False).tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    return EncoderEmbedding()

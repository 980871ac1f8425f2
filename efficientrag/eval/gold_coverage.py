"""Whether a search backend holds the evaluated questions' gold chunks at all.

Evaluation takes gold ids from the dataset, never from the index, so a Milvus collection filled
from another corpus would score zero recall without a word. Backends that can look ids up
(``missing_ids``) are asked before the run: none found stops it, some missing is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from efficientrag.data.schema import Example
from efficientrag.errors import InvalidArgumentError

log = logging.getLogger(__name__)


def check_gold_coverage(retriever: Any, examples: Sequence[Example]) -> list[str]:
    """The gold ids the backend lacks (empty when it cannot tell); raises when it lacks them all."""
    missing_ids = getattr(retriever, "missing_ids", None)
    gold = sorted({cid for ex in examples for cid in ex.gold_chunk_ids})
    if missing_ids is None or not gold:
        return []
    missing = missing_ids(gold)
    where = getattr(retriever, "location", type(retriever).__name__)
    if len(missing) == len(gold):
        raise InvalidArgumentError(
            f"{where} holds none of the {len(gold)} gold chunk ids of the evaluated questions (e.g. "
            f"{missing[0]!r}): it was filled from another corpus; index this dataset's corpus into it"
        )
    if missing:
        log.warning(
            "%s lacks %d of %d gold chunk ids (e.g. %r): their questions cannot reach full recall",
            where,
            len(missing),
            len(gold),
            missing[0],
        )
    return missing

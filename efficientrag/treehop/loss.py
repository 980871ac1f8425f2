"""InfoNCE over a batch of questions' hop chains, with teacher forcing.

For every chain path (c1, ..., cL) of a batch question, the query that must retrieve cL is formed
down the gold chain: q1 = the question's vector, q_{i+1} = TreeHop(q_i, c_i). Paths are computed
level by level, one network call per level for the whole batch, and a path's query reuses its
prefix's query (so the gradient flows through every hop of a chain). Each path's query is scored
(cosine / temperature) against one candidate matrix: every gold chunk and own negative of every
batch question. For a question's query, its other gold chunks are masked out (they are right
answers for other hops, not wrong ones); without ``in_batch`` only its own paragraphs remain,
without ``own`` its own negatives are masked. Hop-1 targets are not scored: their query is the
question itself, which nothing here can change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from efficientrag.treehop.training_data import TrainItem


@dataclass
class LossParts:
    loss: torch.Tensor
    targets: int
    # Share of paths whose target outscores every unmasked candidate.
    top1: float


def chain_loss(
    network: nn.Module,
    questions: torch.Tensor,
    chunks: torch.Tensor,
    batch: Sequence[TrainItem],
    *,
    temperature: float,
    own: bool = True,
    in_batch: bool = True,
) -> LossParts:
    device = questions.device
    candidate_rows = sorted({r for it in batch for r in (*it.gold, *it.negatives)})
    column = {r: j for j, r in enumerate(candidate_rows)}
    candidates = F.normalize(chunks[torch.tensor(candidate_rows, device=device)], dim=-1)

    built: dict[tuple[int, tuple[int, ...]], torch.Tensor] = {}
    outputs: list[torch.Tensor] = []
    targets: list[int] = []
    allowed_rows: list[torch.Tensor] = []
    depth = max((len(p) for it in batch for p in it.paths), default=0)
    for level in range(2, depth + 1):
        jobs = [(i, p) for i, it in enumerate(batch) for p in it.paths if len(p) == level]
        if not jobs:
            continue
        parents = torch.stack(
            [questions[batch[i].question] if level == 2 else built[(i, p[:-1])] for i, p in jobs]
        )
        parent_chunks = chunks[torch.tensor([p[-2] for _, p in jobs], device=device)]
        queries = network(parents, parent_chunks)
        for (i, p), q in zip(jobs, queries, strict=True):
            built[(i, p)] = q
            outputs.append(q)
            targets.append(column[p[-1]])
            allowed_rows.append(_allowed(batch[i], p[-1], column, len(candidate_rows), own, in_batch, device))
    if not outputs:
        zero = questions.sum() * 0.0
        return LossParts(zero, 0, 0.0)
    logits = F.normalize(torch.stack(outputs), dim=-1) @ candidates.T / temperature
    logits = logits.masked_fill(~torch.stack(allowed_rows), float("-inf"))
    target = torch.tensor(targets, device=device)
    loss = F.cross_entropy(logits, target)
    top1 = float((logits.argmax(dim=-1) == target).float().mean())
    return LossParts(loss, len(targets), top1)


def _allowed(
    item: TrainItem,
    target_row: int,
    column: dict[int, int],
    width: int,
    own: bool,
    in_batch: bool,
    device: torch.device,
) -> torch.Tensor:
    mine = set(item.gold) | set(item.negatives)
    allowed = torch.full((width,), in_batch, dtype=torch.bool, device=device)
    if in_batch:
        for r in mine:
            allowed[column[r]] = False
    if own:
        for r in item.negatives:
            allowed[column[r]] = True
    allowed[column[target_row]] = True
    return allowed

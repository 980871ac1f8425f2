"""Datasets without prompts of their own (``jsonl`` data, the toy world): a 2-hop chain and a
comparison, which between them show both ways sub-questions relate (one uses the other's answer,
or they are independent). Types named like the common ones pick the matching example.
"""

from __future__ import annotations

from efficientrag.synth.prompts.shots import (
    DecomposeShot,
    LabelShot,
    NextHopShot,
    PromptSet,
    SubQuestionShot,
)

CHAIN = DecomposeShot(
    question="What instrument does the founder of the Saltmere Quartet play?",
    answer="viola",
    qtype="bridge",
    paragraphs=(
        (
            "Saltmere Quartet",
            "The Saltmere Quartet is a string quartet formed in 1999 by Jonah Peel while he was a student in Corrin.",
        ),
        (
            "Jonah Peel",
            "Jonah Peel is a violist and teacher. He plays a viola built in 1790 and teaches at the Corrin "
            "Conservatory.",
        ),
    ),
    sub_questions=(
        SubQuestionShot("Who formed the Saltmere Quartet?", "Jonah Peel", (), 1),
        SubQuestionShot("What instrument does Jonah Peel play?", "viola", (1,), 2),
    ),
)

COMPARISON = DecomposeShot(
    question="Which bridge is longer, the Harl Bridge or the Osk Viaduct?",
    answer="the Osk Viaduct",
    qtype="comparison",
    paragraphs=(
        (
            "Harl Bridge",
            "The Harl Bridge is a stone arch bridge over the river Dunn. It is 210 metres long and was "
            "completed in 1802.",
        ),
        (
            "Osk Viaduct",
            "The Osk Viaduct carries a railway across the Osk valley. At 540 metres, it is the longest "
            "viaduct in the region.",
        ),
    ),
    sub_questions=(
        SubQuestionShot("How long is the Harl Bridge?", "210 metres", (), 1),
        SubQuestionShot("How long is the Osk Viaduct?", "540 metres", (), 2),
    ),
)

_CHAIN_TYPES = ("bridge", "compositional", "inference", "2hop", "3hop1", "4hop1")

PROMPTS = PromptSet(
    dataset="generic",
    shapes={"chain": (CHAIN,), "comparison": (COMPARISON,)},
    type_shapes={
        **{t: ("chain",) for t in _CHAIN_TYPES},
        "comparison": ("comparison",),
        "bridge_comparison": ("chain", "comparison"),
    },
    default_shapes=("chain", "comparison"),
    type_notes={
        **{
            t: "each sub-question after the first asks about the answer of an earlier one"
            for t in _CHAIN_TYPES
        },
        "comparison": "the same fact about each compared entity; the sub-questions are independent",
        "bridge_comparison": (
            "for each compared entity, first find a related entity, then the compared fact about it: "
            "independent chains"
        ),
    },
    label=(
        LabelShot(
            "Who formed the Saltmere Quartet?",
            "Jonah Peel",
            CHAIN.paragraphs[0],
            "Saltmere Quartet formed in 1999 by Jonah Peel",
        ),
        LabelShot(
            "How long is the Osk Viaduct?", "540 metres", COMPARISON.paragraphs[1], "Osk Viaduct 540 metres"
        ),
    ),
    next_hop=(
        NextHopShot(
            question="What instrument does the founder of the Saltmere Quartet play?",
            answered=(
                (
                    "Who formed the Saltmere Quartet?",
                    "Jonah Peel",
                    "Saltmere Quartet formed in 1999 by Jonah Peel",
                ),
            ),
            filtered_query="What instrument does play? Jonah Peel",
        ),
    ),
)

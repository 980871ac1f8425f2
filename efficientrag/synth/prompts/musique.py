"""MuSiQue: 2-4 hop questions with an annotated decomposition (``#k`` = answer of step k,
``"X >> relation"`` = that relation of X), which the prompt passes on as annotated steps.

Shapes: chains (2hop, 3hop1, 4hop1: each step asks about the previous answer) and joins (3hop2:
two independent steps, the last uses both; 4hop2/4hop3 mix a chain and a join, so their prompt
shows both kinds of example and the steps say which answer goes where).
"""

from __future__ import annotations

from efficientrag.synth.prompts.shots import (
    DecomposeShot,
    LabelShot,
    NextHopShot,
    PromptSet,
    SubQuestionShot,
)

TWO_HOP = DecomposeShot(
    question="When was the university that publishes the Kestrel Gazette founded?",
    answer="1887",
    qtype="2hop",
    paragraphs=(
        (
            "Kestrel Gazette",
            "The Kestrel Gazette is a student newspaper published by Aldmoor University. It has appeared "
            "weekly since 1931.",
        ),
        (
            "Aldmoor University",
            "Aldmoor University is a public research university in Hollin. It was founded in 1887 as a "
            "college of mining.",
        ),
    ),
    steps=(("Kestrel Gazette >> publisher", "Aldmoor University", 1), ("When was #1 founded?", "1887", 2)),
    sub_questions=(
        SubQuestionShot("Who publishes the Kestrel Gazette?", "Aldmoor University", (), 1),
        SubQuestionShot("When was Aldmoor University founded?", "1887", (1,), 2),
    ),
)

THREE_HOP_CHAIN = DecomposeShot(
    question="What river runs through the birthplace of the composer of the Winter Canticle?",
    answer="River Sellwater",
    qtype="3hop1",
    paragraphs=(
        (
            "Winter Canticle",
            "The Winter Canticle is a choral work in four movements composed by Petra Lind in 1911.",
        ),
        (
            "Petra Lind",
            "Petra Lind (1874 - 1940) was a composer and organist. She was born in Wenmarsh and spent most "
            "of her life in the capital.",
        ),
        (
            "Wenmarsh",
            "Wenmarsh is a market town on the River Sellwater. Its medieval bridge is the oldest in the county.",
        ),
    ),
    steps=(
        ("Winter Canticle >> composer", "Petra Lind", 1),
        ("#1 >> place of birth", "Wenmarsh", 2),
        ("which river runs through #2", "River Sellwater", 3),
    ),
    sub_questions=(
        SubQuestionShot("Who composed the Winter Canticle?", "Petra Lind", (), 1),
        SubQuestionShot("Where was Petra Lind born?", "Wenmarsh", (1,), 2),
        SubQuestionShot("What river runs through Wenmarsh?", "River Sellwater", (2,), 3),
    ),
)

THREE_HOP_JOIN = DecomposeShot(
    question=(
        "In which province of the country where Tovik Fort stands is the town that hosts the Amber "
        "Lantern Festival?"
    ),
    answer="Eastern Reach",
    qtype="3hop2",
    paragraphs=(
        (
            "Tovik Fort",
            "Tovik Fort is a seventeenth-century coastal fortress in Maravia, built to guard the northern straits.",
        ),
        (
            "Amber Lantern Festival",
            "The Amber Lantern Festival is held every autumn in the town of Quell, where thousands of paper "
            "lanterns are floated on the harbor.",
        ),
        (
            "Quell",
            "Quell is a fishing town in the Eastern Reach province of Maravia, with a population of about 12,000.",
        ),
    ),
    steps=(
        ("Tovik Fort >> country", "Maravia", 1),
        ("Amber Lantern Festival >> location", "Quell", 2),
        ("In which province of #1 is #2?", "Eastern Reach", 3),
    ),
    sub_questions=(
        SubQuestionShot("In which country does Tovik Fort stand?", "Maravia", (), 1),
        SubQuestionShot("In which town is the Amber Lantern Festival held?", "Quell", (), 2),
        SubQuestionShot("In which province of Maravia is Quell?", "Eastern Reach", (1, 2), 3),
    ),
)

FOUR_HOP_CHAIN = DecomposeShot(
    question="Who founded the label that released the debut album of the singer who voiced Tilly in Moss Hollow?",
    answer="Sven Aldo",
    qtype="4hop1",
    paragraphs=(
        (
            "Moss Hollow",
            "Moss Hollow is a 2009 animated film about a family of hedgehogs. The young hedgehog Tilly is "
            "voiced by the singer Anja Brevik.",
        ),
        (
            "Anja Brevik",
            "Anja Brevik is a singer and actress. Her debut album, Northern Static, came out in 2003.",
        ),
        (
            "Northern Static",
            "Northern Static is the debut studio album by Anja Brevik, released in 2003 on Glasshouse Records.",
        ),
        (
            "Glasshouse Records",
            "Glasshouse Records is an independent record label founded in 1994 by the producer Sven Aldo.",
        ),
    ),
    steps=(
        ("who voiced Tilly in Moss Hollow", "Anja Brevik", 1),
        ("#1 >> debut album", "Northern Static", 2),
        ("#2 >> record label", "Glasshouse Records", 3),
        ("who founded #3", "Sven Aldo", 4),
    ),
    sub_questions=(
        SubQuestionShot("Who voiced Tilly in Moss Hollow?", "Anja Brevik", (), 1),
        SubQuestionShot("What is the debut album of Anja Brevik?", "Northern Static", (1,), 2),
        SubQuestionShot("Which record label released Northern Static?", "Glasshouse Records", (2,), 3),
        SubQuestionShot("Who founded Glasshouse Records?", "Sven Aldo", (3,), 4),
    ),
)

_CHAIN_NOTE = "a chain: each step asks about the answer of the step before"

PROMPTS = PromptSet(
    dataset="musique",
    shapes={
        "2hop": (TWO_HOP,),
        "3hop1": (THREE_HOP_CHAIN,),
        "3hop2": (THREE_HOP_JOIN,),
        "4hop1": (FOUR_HOP_CHAIN,),
    },
    type_shapes={
        "2hop": ("2hop", "3hop1"),
        "3hop1": ("3hop1", "2hop"),
        "3hop2": ("3hop2", "3hop1"),
        "4hop1": ("4hop1", "3hop1"),
        "4hop2": ("4hop1", "3hop2"),
        "4hop3": ("3hop2", "4hop1"),
    },
    default_shapes=("2hop", "3hop2"),
    type_notes={
        "2hop": "two steps: the first finds an entity, the second asks about it",
        "3hop1": f"three steps, {_CHAIN_NOTE}",
        "3hop2": "three steps: two independent first steps, and a last one that uses both answers",
        "4hop1": f"four steps, {_CHAIN_NOTE}",
        "4hop2": "four steps mixing a chain and a join; the annotated steps say which answer each step uses",
        "4hop3": "four steps mixing a chain and a join; the annotated steps say which answer each step uses",
    },
    label=(
        LabelShot(
            "Where was Petra Lind born?",
            "Wenmarsh",
            THREE_HOP_CHAIN.paragraphs[1],
            "Petra Lind born in Wenmarsh",
        ),
        LabelShot(
            "Which record label released Northern Static?",
            "Glasshouse Records",
            FOUR_HOP_CHAIN.paragraphs[2],
            "Northern Static released in 2003 on Glasshouse Records",
        ),
    ),
    next_hop=(
        # After the original question.
        NextHopShot(
            question="What river runs through the birthplace of the composer of the Winter Canticle?",
            answered=(
                ("Who composed the Winter Canticle?", "Petra Lind", "Winter Canticle composed by Petra Lind"),
            ),
            filtered_query="What river runs through the birthplace of? Petra Lind",
        ),
        # After an earlier next-hop query.
        NextHopShot(
            question="What river runs through the birthplace of? Petra Lind",
            answered=(("Where was Petra Lind born?", "Wenmarsh", "Petra Lind born in Wenmarsh"),),
            filtered_query="What river runs through? Wenmarsh",
        ),
        # Two answered steps feed one.
        NextHopShot(
            question=THREE_HOP_JOIN.question,
            answered=(
                (
                    "In which country does Tovik Fort stand?",
                    "Maravia",
                    "Tovik Fort coastal fortress in Maravia",
                ),
                (
                    "In which town is the Amber Lantern Festival held?",
                    "Quell",
                    "Amber Lantern Festival held in the town of Quell",
                ),
            ),
            filtered_query="In which province of is? Maravia Quell",
        ),
    ),
)

"""HotpotQA: two gold paragraphs per question, bridge or comparison, no annotated decomposition.

The official synthesis code has no HotpotQA prompts for labeling and next-hop queries; these
cover all three tasks. A comparison asks the compared attribute of each entity (for yes/no
questions, the fact that decides), so both paragraphs get meaningful labels.
"""

from __future__ import annotations

from efficientrag.synth.prompts.shots import (
    DecomposeShot,
    LabelShot,
    NextHopShot,
    PromptSet,
    SubQuestionShot,
)

BRIDGE = DecomposeShot(
    question="In which city was the founder of the Marlowe Ceramics Guild born?",
    answer="Tavrick",
    qtype="bridge",
    paragraphs=(
        (
            "Marlowe Ceramics Guild",
            "The Marlowe Ceramics Guild is an association of potters in western Ostland. It was founded "
            "in 1921 by the sculptor Edda Marrin and holds an annual kiln festival.",
        ),
        (
            "Edda Marrin",
            "Edda Marrin (1888 - 1960) was an Ostlandic sculptor and ceramicist. Born in Tavrick, she "
            "studied in Lune before settling in the western provinces.",
        ),
    ),
    sub_questions=(
        SubQuestionShot("Who founded the Marlowe Ceramics Guild?", "Edda Marrin", (), 1),
        SubQuestionShot("In which city was Edda Marrin born?", "Tavrick", (1,), 2),
    ),
)

COMPARISON = DecomposeShot(
    question="Which magazine started publishing first, Harbor Lights Quarterly or The Fennick Review?",
    answer="The Fennick Review",
    qtype="comparison",
    paragraphs=(
        (
            "Harbor Lights Quarterly",
            "Harbor Lights Quarterly is a literary magazine based in Port Aldane. Its first issue "
            "appeared in 1974, and it publishes short fiction and essays.",
        ),
        (
            "The Fennick Review",
            "The Fennick Review is a monthly magazine of politics and culture. It was launched in 1952 "
            "by the journalist Oren Vail.",
        ),
    ),
    sub_questions=(
        SubQuestionShot("When did Harbor Lights Quarterly start publishing?", "1974", (), 1),
        SubQuestionShot("When was The Fennick Review launched?", "1952", (), 2),
    ),
)

YES_NO = DecomposeShot(
    question="Are Corvin Dahl and Mira Lessing both painters?",
    answer="no",
    qtype="comparison",
    paragraphs=(
        (
            "Corvin Dahl",
            "Corvin Dahl (born 1961) is a painter and printmaker whose landscapes of the northern fjords "
            "are held in several national collections.",
        ),
        (
            "Mira Lessing",
            "Mira Lessing is a composer and pianist. Her first symphony premiered in 1998 in Vellholm.",
        ),
    ),
    sub_questions=(
        SubQuestionShot("What is Corvin Dahl's profession?", "painter and printmaker", (), 1),
        SubQuestionShot("What is Mira Lessing's profession?", "composer and pianist", (), 2),
    ),
)

PROMPTS = PromptSet(
    dataset="hotpotqa",
    shapes={"bridge": (BRIDGE,), "comparison": (COMPARISON, YES_NO)},
    type_shapes={"bridge": ("bridge",), "comparison": ("comparison",)},
    default_shapes=("bridge", "comparison"),
    type_notes={
        "bridge": (
            "one paragraph identifies an entity the question describes without naming it; the other "
            "answers the question about that entity. Ask for the entity first, then ask the question "
            "about it by name"
        ),
        "comparison": (
            "the question compares two entities. Ask the compared attribute of each entity, one "
            "sub-question per paragraph (for a yes/no question, the fact that decides it); the "
            "sub-questions do not depend on each other"
        ),
    },
    label=(
        LabelShot(
            "Who founded the Marlowe Ceramics Guild?",
            "Edda Marrin",
            BRIDGE.paragraphs[0],
            "Marlowe Ceramics Guild founded by the sculptor Edda Marrin",
        ),
        LabelShot(
            "What is Mira Lessing's profession?",
            "composer and pianist",
            YES_NO.paragraphs[1],
            "Mira Lessing is a composer and pianist",
        ),
    ),
    next_hop=(
        NextHopShot(
            question="In which city was the founder of the Marlowe Ceramics Guild born?",
            answered=(
                (
                    "Who founded the Marlowe Ceramics Guild?",
                    "Edda Marrin",
                    "Marlowe Ceramics Guild founded by the sculptor Edda Marrin",
                ),
            ),
            filtered_query="In which city was born? Edda Marrin",
        ),
        NextHopShot(
            question="What award did the director of Quiet Meridian receive in 2004?",
            answered=(
                ("Who directed Quiet Meridian?", "Ilse Varga", "Quiet Meridian directed by Ilse Varga"),
            ),
            filtered_query="What award did receive in 2004? Ilse Varga",
        ),
    ),
)

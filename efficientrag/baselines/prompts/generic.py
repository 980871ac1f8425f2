"""Dataset-neutral exemplars, for questions from any other source (``jsonl`` datasets)."""

from efficientrag.baselines.prompts.exemplar import Exemplar

EXEMPLARS = (
    Exemplar(
        question="Which element has the higher atomic number, iron or copper?",
        answer="copper",
        thought="Iron has atomic number 26 and copper has 29. 29 is higher. So the answer is copper.",
        steps=(
            ("What is the atomic number of iron?", "26"),
            ("What is the atomic number of copper?", "29"),
        ),
        documents=(
            ("Iron", "Iron is a chemical element with symbol Fe and atomic number 26."),
            ("Copper", "Copper is a chemical element with symbol Cu and atomic number 29."),
        ),
    ),
    Exemplar(
        question="What is the official language of the country whose capital is Lisbon?",
        answer="Portuguese",
        thought=(
            "Lisbon is the capital of Portugal. The official language of Portugal is Portuguese. So the "
            "answer is Portuguese."
        ),
        steps=(
            ("Which country has Lisbon as its capital?", "Portugal"),
            ("What is the official language of Portugal?", "Portuguese"),
        ),
        documents=(
            ("Lisbon", "Lisbon is the capital and largest city of Portugal."),
            (
                "Portugal",
                "Portugal is a country on the Iberian Peninsula. Its official language is Portuguese.",
            ),
        ),
    ),
    Exemplar(
        question="Is the highest mountain in Africa located in Tanzania?",
        answer="yes",
        thought=(
            "The highest mountain in Africa is Mount Kilimanjaro. Mount Kilimanjaro is in Tanzania. So the "
            "answer is yes."
        ),
        steps=(
            ("What is the highest mountain in Africa?", "Mount Kilimanjaro"),
            ("In which country is Mount Kilimanjaro?", "Tanzania"),
        ),
        documents=(
            (
                "Mount Kilimanjaro",
                "Mount Kilimanjaro is a dormant volcano in Tanzania. At 5,895 metres it is the highest "
                "mountain in Africa.",
            ),
        ),
    ),
)

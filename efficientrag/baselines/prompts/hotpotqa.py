"""Exemplars in HotpotQA's style: a bridge question, an entity comparison and a yes/no comparison."""

from efficientrag.baselines.prompts.exemplar import Exemplar

EXEMPLARS = (
    Exemplar(
        question="The author of the novel Pride and Prejudice was born in which English county?",
        answer="Hampshire",
        thought=(
            "Pride and Prejudice is a novel by Jane Austen. Jane Austen was born in Steventon, a village "
            "in Hampshire. So the answer is Hampshire."
        ),
        steps=(
            ("Who wrote the novel Pride and Prejudice?", "Jane Austen"),
            ("In which English county was Jane Austen born?", "Hampshire"),
        ),
        documents=(
            (
                "Pride and Prejudice",
                "Pride and Prejudice is a novel by Jane Austen, first published in 1813. It follows "
                "Elizabeth Bennet and her sisters.",
            ),
            (
                "Jane Austen",
                "Jane Austen (16 December 1775 - 18 July 1817) was an English novelist. She was born at the "
                "rectory in Steventon, Hampshire, where her father was the parish clergyman.",
            ),
        ),
    ),
    Exemplar(
        question="Which was founded first, Harvard University or Yale University?",
        answer="Harvard University",
        thought=(
            "Harvard University was founded in 1636 and Yale University in 1701. 1636 is earlier than "
            "1701. So the answer is Harvard University."
        ),
        steps=(
            ("When was Harvard University founded?", "1636"),
            ("When was Yale University founded?", "1701"),
        ),
        documents=(
            (
                "Harvard University",
                "Harvard University is a private research university in Cambridge, Massachusetts. Founded "
                "in 1636, it is the oldest institution of higher learning in the United States.",
            ),
            (
                "Yale University",
                "Yale University is a private research university in New Haven, Connecticut. It was "
                "founded in 1701 as the Collegiate School.",
            ),
        ),
    ),
    Exemplar(
        question="Do the Danube and the Rhine both flow into the Black Sea?",
        answer="no",
        thought=(
            "The Danube flows into the Black Sea, but the Rhine flows into the North Sea. They do not "
            "both flow into the Black Sea. So the answer is no."
        ),
        steps=(
            ("Into which sea does the Danube flow?", "the Black Sea"),
            ("Into which sea does the Rhine flow?", "the North Sea"),
        ),
        documents=(
            (
                "Danube",
                "The Danube is the second-longest river in Europe. It rises in the Black Forest in Germany "
                "and flows south-east for about 2,850 km into the Black Sea.",
            ),
            (
                "Rhine",
                "The Rhine rises in the Swiss Alps and flows north through Germany and the Netherlands, "
                "where it empties into the North Sea.",
            ),
        ),
    ),
)

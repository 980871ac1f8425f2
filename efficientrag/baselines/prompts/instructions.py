"""The task instructions of every prompt kind (our wording; the structure follows the EfficientRAG
paper's App. B.3: JSON ``{"answer": ...}`` replies, ``{"thought", "answer"}`` where the model reasons,
``{"decomposed_questions": [...]}`` for decomposition, and Self-Ask's own line prefixes).

They are shared by every dataset; what differs per dataset is the exemplars.
"""

SHORT_ANSWER = "a name, a date, a number, or yes/no"

DIRECT = (
    "Answer the question from your own knowledge. Reply with only a JSON object of the form "
    f'{{"answer": "..."}}, where the answer is short ({SHORT_ANSWER}). Do not explain.'
)

COT = (
    "Answer the question from your own knowledge. First reason about it step by step, then answer. "
    'Reply with only a JSON object of the form {"thought": "...", "answer": "..."}: "thought" holds '
    f'your reasoning in a few sentences and "answer" the short answer ({SHORT_ANSWER}).'
)

DECOMPOSE = (
    "Break the multi-hop question into the simple questions that must be answered, one after another, "
    "to answer it. Each simple question asks for one fact that can be looked up on its own; where it "
    "depends on an earlier answer, name that answer if you know it. Reply with only a JSON object of "
    'the form {"decomposed_questions": ["...", "..."]}.'
)

RETRIEVAL_ANSWER = (
    "Answer the question using the documents given with it (each starts with its title). If they do "
    "not contain the answer, answer from your own knowledge. Reply with only a JSON object of the form "
    f'{{"answer": "..."}}, where the answer is short ({SHORT_ANSWER}). Do not explain.'
)

ITER_RETGEN = (
    "Read the documents given with the question (each starts with its title), reason step by step, "
    'then answer. Reply with only a JSON object of the form {"thought": "...", "answer": "..."}: '
    '"thought" holds your reasoning in a few sentences and "answer" the short answer '
    f"({SHORT_ANSWER})."
)

SELF_ASK = (
    "Answer the question by asking yourself simpler follow-up questions when they are needed. Every "
    'line starts with one of "Are follow up questions needed here:", "Follow up:", '
    '"Intermediate answer:" or "So the final answer is:". Give the final answer in a few words '
    f"({SHORT_ANSWER})."
)

# Self-Ask's line prefixes (Press et al., 2023).
NEEDS_FOLLOW_UP = "Are follow up questions needed here:"
FOLLOW_UP = "Follow up:"
INTERMEDIATE = "Intermediate answer:"
FINAL = "So the final answer is:"

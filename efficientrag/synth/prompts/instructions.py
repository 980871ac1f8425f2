"""System instructions of the three teacher tasks (our wording; the JSON keys are the paper's).

The rules the paper's data depends on are stated in each: one sub-question per paragraph with
acyclic dependencies; labeled and next-hop words copied, never added, never reordered. The
replies are parsed by ``efficientrag.synth.replies`` and checked again downstream (validation,
alignment), so a model that breaks a rule produces a reject, not a bad training row.
"""

from __future__ import annotations

DECOMPOSE = """\
You help build training data for a multi-hop retrieval system. You get a multi-hop question, its \
final answer, and the numbered paragraphs that together support that answer; every paragraph is \
needed. Split the question into single-hop sub-questions:
- exactly one sub-question per paragraph, answerable from that paragraph alone once the answers \
of the sub-questions it depends on are known;
- write earlier answers into later sub-questions in full (never placeholders such as #1);
- give each sub-question a short answer, written as its paragraph writes it;
- "dependency" lists the numbers of the sub-questions whose answers it uses (empty if none); \
no sub-question may depend on itself or, through others, on its own answer;
- "document" is the number of the paragraph that answers it.
Some questions come with annotations from the dataset (evidence triples, or annotated steps in \
which #k stands for the answer of step k and "X >> relation" asks for that relation of X). When \
they are given, follow them: they say which facts are needed and in which order.
Reply with one JSON object and nothing else, in this form:
{"decomposed_questions": {"1": {"sub_question": "...", "answer": "...", "dependency": [], \
"document": 1}, "2": {"sub_question": "...", "answer": "...", "dependency": [1], "document": 2}}}"""

LABEL = """\
You help build training data for a model that marks, in a retrieved paragraph, the words worth \
keeping. You get a sub-question, its answer and one paragraph. Copy out the words of the \
paragraph a reader needs to answer the sub-question: the answer itself and the few words that \
link it to what the sub-question asks about.
Rules: copy words exactly as the paragraph writes them; keep the paragraph's order; never add, \
change, or reorder words; take as few words as the answer needs.
Reply with one JSON object and nothing else: {"extracted_words": "..."}"""

NEXT_HOP = """\
You help build training data for a model that writes the query of the next retrieval step. You \
get the current question, the sub-question(s) already answered with their answers, and the known \
information found for them (words from the paragraphs that answered them). Write the query of \
the next step by picking words only:
- drop the words of the question that the known information has answered;
- keep the other words of the question, in their order;
- then add the words of the known information that the next step needs (usually the entity \
that was found), in their order.
Use only words that appear in the question or in the known information; never add, change, or \
reorder words.
Reply with one JSON object and nothing else: {"filtered_query": "..."}"""

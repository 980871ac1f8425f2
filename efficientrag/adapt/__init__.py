"""Adapting trained Labeler/Filter models to a new corpus without gold annotations.

Two sources of training rows, both in the synthesized rows' format so the one training loop
fine-tunes on them: the corpus itself (:mod:`links` finds paragraphs that name other paragraphs,
:mod:`pseudo_questions` turns those chains into questions with known labels, :mod:`pseudo_rows`
into Labeler/Filter rows), and unlabeled questions (:mod:`self_training`: the models' own confident
decisions). :mod:`job` mixes them with the original training set and fine-tunes, resumably.
"""

"""``efficientrag distill``: shallower Labeler/Filter students taught by trained ones.

``pairs`` records the (query, chunk) pairs and Filter inputs the teacher's own loop meets on the
training questions and cuts them into rows; ``job`` runs the stages (record, mix, distill each
model on the one training loop) in fingerprinted, resumable folders; ``config`` holds the settings.
"""

"""Labeler/Tagger and Filter token classifiers."""

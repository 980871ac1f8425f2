"""Text utilities shared by readers, synthesis, models, pipeline and evaluation."""

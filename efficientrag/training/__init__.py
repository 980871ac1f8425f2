"""efficientrag.training"""

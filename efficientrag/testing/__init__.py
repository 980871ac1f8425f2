"""efficientrag.testing"""

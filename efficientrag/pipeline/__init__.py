"""efficientrag.pipeline"""

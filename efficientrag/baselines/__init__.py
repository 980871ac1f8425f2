"""efficientrag.baselines"""

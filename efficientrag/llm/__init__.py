"""efficientrag.llm"""

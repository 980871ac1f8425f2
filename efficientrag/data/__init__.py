"""efficientrag.data"""

"""efficientrag.synth"""

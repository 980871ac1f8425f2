"""Metrics, runners and reports."""

"""Marquee's load benchmark: the seed articles' simulator scenarios, replayed.

``python bench/run.py --help`` runs it; bench/README.md explains it.
"""

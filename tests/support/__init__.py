"""Helpers the test modules share (importable as ``support``: ``tests/conftest.py`` puts ``tests/`` on the path)."""

"""rlaudit: investigate why reinforcement-learning training got worse or slower after a change.

The package is imported inside subjects' own processes (by probes), so importing it does no work and pulls
in nothing heavy: import the room you need (``rlaudit.engine.workbench``, ``rlaudit.agents``, ...).
"""

__version__ = "0.1.0"

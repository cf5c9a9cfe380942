"""The tests of the agents room: one ``test_<module>.py`` per module of ``rlaudit.agents``."""

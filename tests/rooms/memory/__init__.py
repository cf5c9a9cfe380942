"""The tests of the memory room: one ``test_<module>.py`` per module of ``rlaudit.memory``."""

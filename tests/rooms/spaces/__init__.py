"""The tests of the spaces room: one ``test_<module>.py`` per module of ``rlaudit.spaces``."""

"""The tests of the logging room: one ``test_<module>.py`` per module of ``rlaudit.logging``."""

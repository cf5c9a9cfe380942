"""The tests of the config room: one ``test_<module>.py`` per module of ``rlaudit.config``."""

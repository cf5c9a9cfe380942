"""The tests of the optimizer room: one ``test_<module>.py`` per module of ``rlaudit.optimizer``."""

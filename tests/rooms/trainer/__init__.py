"""The tests of the trainer room: one ``test_<module>.py`` per module of ``rlaudit.trainer``."""

"""The tests of the rewards room: one ``test_<module>.py`` per module of ``rlaudit.rewards``."""

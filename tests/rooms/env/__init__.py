"""The tests of the env room: one ``test_<module>.py`` per module of ``rlaudit.env``."""

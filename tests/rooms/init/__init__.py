"""The tests of the init room: one ``test_<module>.py`` per module of ``rlaudit.init``."""

"""The tests of the curriculum room: one ``test_<module>.py`` per module of ``rlaudit.curriculum``."""

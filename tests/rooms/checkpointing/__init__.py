"""The tests of the checkpointing room: one ``test_<module>.py`` per module of ``rlaudit.checkpointing``."""

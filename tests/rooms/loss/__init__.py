"""The tests of the loss room: one ``test_<module>.py`` per module of ``rlaudit.loss``."""

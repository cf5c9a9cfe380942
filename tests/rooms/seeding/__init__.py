"""The tests of the seeding room: one ``test_<module>.py`` per module of ``rlaudit.seeding``."""

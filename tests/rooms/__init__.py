"""The tests of each room (``lib/rlaudit/<room>/``), one folder per room, and those across rooms."""

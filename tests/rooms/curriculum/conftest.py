"""Fixtures of the curriculum room's tests: ``bench``, built once for the whole folder (``support.benches``)."""

from support.benches import bench  # noqa: F401 - a package-scoped fixture of this room

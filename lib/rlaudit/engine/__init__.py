"""The execution engine: where probes run and what they leave behind.

A check author never needs it: the workbench (the notebook's handle on a pair), the probe jobs, the
worker process and its client, the executor and its backends (local processes, Ray), subjects and
their loaders, the artifact store and subject fingerprints, limits and heartbeats, remembered
failures, safe loading of users' checkpoints, input validation, paths, and ``rlaudit train``.
"""

"""Running one scenario: the runner, its config, run lock, context log, output folders and replay.

Imports only the layers below (agents, scenarios, genesis, memory, providers, store, kernel);
reports read what it writes, experiments drive it (plans/structure.md).
"""

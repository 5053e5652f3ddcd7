"""Plain helpers shared by test modules: builders, constants, drivers. No tests and no fixtures here."""

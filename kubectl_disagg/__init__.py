"""kubectl-disagg: DisaggregatedSets rendered and rolled out without a controller."""

__version__ = "0.1.0"

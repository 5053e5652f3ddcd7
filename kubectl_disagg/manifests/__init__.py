"""Manifests as text: reading YAML/JSON files and streams into documents that keep every value's
line, the document source type the domain builds on, and the one deterministic YAML/JSON writer."""

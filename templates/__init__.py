"""The Jinja2 templates of human-facing text, shipped as the package kubectl_disagg.templates."""

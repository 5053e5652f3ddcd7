"""What people read: Jinja2 templates and the one table builder, status, step and git-rollout
reports, the step console, rollout plans, pull-request text, shell completion."""

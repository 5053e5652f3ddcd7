"""What people read: Jinja2 templates and the one table builder, status, step and git-rollout
reports, pull-request text, shell completion."""

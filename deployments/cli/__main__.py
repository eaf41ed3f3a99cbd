from deployments.cli import entry_point

entry_point()

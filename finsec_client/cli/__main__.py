from finsec_client.cli import entry_point

entry_point()

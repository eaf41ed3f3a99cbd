"""What an operator watches: the replicas' metrics (metrics.py) and their log format (logs.py)."""

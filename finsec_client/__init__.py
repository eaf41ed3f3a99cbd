"""Rollout drivers: real HTTP clients that play episodes against a running finsec-serve, the way NeMo Gym's
Environment Server (`single_agent_turn`) and its legacy agent do, with a policy choosing the tool calls.

    tasks.py     the task set (the embedded corpus's questions, or a JSONL file)
    client.py    the HTTP client: one timed request, cookies, transport failures
    toolbox.py   what a policy calls tools through; builds the Responses-API trajectory verify reads
    policies/    scripted (reads the retrieved passages) and llm (an OpenAI-compatible model with tools)
    drivers.py   the episode lifecycles: environment-server and legacy-agent
    records.py   one episode as a JSONL row
    runner.py    N episodes at concurrency C in one process
    workers.py   the runner as Ray actors spread over a cluster
    summary.py   the end-of-run table; progress.py the live line; plots.py the PNGs; trace.py --trace
"""

"""Helpers shared by the tests (tests/) and the benchmarks (bench/), so that neither imports the other.

What is here: the contract's request bodies and cookie claims (`bodies`), a real redis-server on a free port
(`redis_server`), the fault scenarios on local Ray clusters (`fault_scenarios`, run by the fault tests and by
bench/faults.py), the load generator's cookie handling (`cookies`), the ceiling arithmetic (`ceiling`), the
reward-hacking suite (`reward_hacking`), the whole-rollout report's tables (`rollout_report`) and the reports'
Markdown helpers (`report`). Benchmarks and tests import these as `harness.<module>` from the project root.

Not shipped: the wheel packages only deployments, session_store and finsec (pyproject.toml's
`[tool.setuptools.packages.find] include`).
"""

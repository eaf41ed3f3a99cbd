"""Mutation check of the fast suite: ten contract-breaking edits of the Ray-free core, each applied to a copy of
the project, and the Ray-free tests (tests/unit) run against each. Every mutant must be caught (the suite
exits 1 with a failing test); a mutant that survives names a rule no fast test holds.

    .venv/bin/python tests/test_mutations.py          # prints the table, writes bench/results/mutations.md
    .venv/bin/python -m pytest tests/test_mutations.py  # the same checks, one test per mutant (no report)

Not collected by `make test` (pyproject's testpaths are tests/unit and tests/integration). No Ray. Each
mutant gets a plain copy of the working tree (`session_store`, `deployments`, `tests` and everything else the
tests read; not `.venv` or `.git`), never the project's own files; the copy's packages are checked to be the
ones its tests import (the project is installed editable).
The unmutated copy runs first: a test that fails there (someone's unfinished work in the tree) is left out of
every mutant's run, since it catches nothing. Each mutant's run stops at its first failure (`-x`): the files
that hold the session rules first, then all of tests/unit. The tests that caught the mutants are run again on
the unmutated copy and must pass.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Everything the tests may read (READMEs, configs, the bench scripts), not the environment or the history.
NOT_COPIED = {".venv", ".git", "runs", "finsec_serve.egg-info", "__pycache__", ".hypothesis", ".pytest_cache"}
FIRST = (
    "tests/unit/session_store/test_core.py",
    "tests/unit/deployments/test_contract_rules_extra.py",
    "tests/unit/session_store/test_shard_durability.py",
    "tests/unit/session_store/test_redis_marks.py",
    "tests/unit/deployments/test_verify_leases.py",
    "tests/unit/deployments/test_contract_in_process.py",
)
SUITE_TIMEOUT = 1800


@dataclass(frozen=True)
class Mutation:
    name: str
    rule: str  # what the contract says that the mutant breaks
    path: str
    edits: tuple[tuple[str, str], ...]  # (exact original text, replacement); each original must occur once


MUTATIONS = (
    Mutation(
        "close drops its fence",
        "§C.4: a close fences the ID against late seeds",
        "session_store/core.py",
        (
            (
                "        if fence is None:  # a repeated close keeps the first fence",
                "        if False:  # a repeated close keeps the first fence",
            ),
        ),
    ),
    Mutation(
        "a repeated close extends the fence",
        "Decision 2: a repeated close keeps the first fence",
        "session_store/core.py",
        (
            (
                "        if fence is None:  # a repeated close keeps the first fence",
                "        if True:  # a repeated close keeps the first fence",
            ),
        ),
    ),
    Mutation(
        "an agent-run seed takes over an episode",
        "§C.3 step 2: 409, the episode's documents survive",
        "session_store/core.py",
        (
            (
                "        if session is not None and session.episode is not None:\n"
                '            self._conflict("agent_run_seed_on_episode")',
                '        if False:\n            self._conflict("agent_run_seed_on_episode")',
            ),
        ),
    ),
    Mutation(
        "a lost session's verify is scored unmasked",
        "§C.5, §D.5: verify of a lost session is masked",
        "finsec/verify.py",
        (
            (
                "            if isinstance(outcome, Masked):\n",
                '            if isinstance(outcome, Masked) and outcome.failure_kind != "session_lost":\n',
            ),
            (
                "partial(verdict_row, body, outcome.verdict",
                'partial(verdict_row, body, getattr(outcome, "verdict", verdict)',
            ),
        ),
    ),
    Mutation(
        "the durable seed is never written",
        "durable seeds: a session open in a dead shard life is lost",
        "session_store/shard.py",
        (
            (
                "                    written = await self._marks.write(writes, owners, {sid: self._parts.get(sid) "
                "for sid in writes})\n",
                "                    written = await self._marks.write({k: v for k, v in writes.items() if v is None or "
                "v.open_in is None}, owners)\n",
            ),
        ),
    ),
    Mutation(
        "a session past its TTL is served",
        "§C.9: never served past session_ttl_seconds",
        "session_store/core.py",
        (
            (
                "        if session is not None and self._past_ttl(session, self.clock()):\n"
                "            self._evict(sid, session)",
                "        if False:\n            self._evict(sid, session)",
            ),
        ),
    ),
    Mutation(
        "a conflicting episode seed is taken as a retry",
        "§C.2 step 3, Decision 4: 409 on another episode, task or task_data",
        "session_store/core.py",
        (("            if session.episode != seed:\n", "            if False:\n"),),
    ),
    Mutation(
        "a learned mark overrides an open session",
        "durable marks: what the shard holds is newer",
        "session_store/core.py",
        (
            (
                "        if not self.wants_mark(sid):\n            return\n        if mark.drop_at <= self.clock():\n",
                "        if mark.drop_at <= self.clock():\n",
            ),
        ),
    ),
    Mutation(
        "a verdict is served across grading settings",
        "Decision 7: the cache is per body and grader",
        "finsec/verify.py",
        (
            (
                "        return canonical_digest([self._grading_key, body])\n",
                '        return canonical_digest(["", body])\n',
            ),
        ),
    ),
    Mutation(
        "retire releases nothing",
        "§C.8, Decision 8: retire releases everything, idempotently",
        "session_store/core.py",
        (
            (
                '        """Release everything the session holds; idempotent; no fence (Decision 8)."""\n'
                "        self._release(sid)\n",
                '        """Release everything the session holds; idempotent; no fence (Decision 8)."""\n'
                "        pass\n",
            ),
        ),
    ),
)


@dataclass
class Result:
    mutation: Mutation
    returncode: int
    caught_by: str | None  # the first failing test
    seconds: float
    output: str = ""

    @property
    def caught(self) -> bool:
        return self.returncode == 1 and self.caught_by is not None


def copy_project(dest: Path) -> Path:
    root = dest / "finsec-serve"
    root.mkdir()
    for source in ROOT.iterdir():
        if source.name in NOT_COPIED:
            continue
        if source.is_dir():
            shutil.copytree(source, root / source.name, symlinks=True, ignore=shutil.ignore_patterns(*NOT_COPIED))
        else:
            shutil.copy2(source, root / source.name)
    shared = ROOT.parent / "shared"  # the real filings some tests read (they skip without them)
    if shared.is_dir():
        (dest / "shared").symlink_to(shared)
    return root


def apply(root: Path, mutation: Mutation) -> None:
    path = root / mutation.path
    text = path.read_text()
    for old, new in mutation.edits:
        count = text.count(old)
        if count != 1:
            raise RuntimeError(
                f"{mutation.name}: expected the original text once in {mutation.path}, found it "
                f"{count} times; update the mutation to the code"
            )
        text = text.replace(old, new)
    path.write_text(text)
    compile(text, str(path), "exec")  # a mutant that does not compile would be "caught" for nothing


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "RAY_", "FINSEC_"))}
    env.update(PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1")
    return env


def check_imports(root: Path) -> None:
    """The editable install points at the project; the copy's packages must win in the copy."""
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import deployments, session_store, tests; "
            "print(deployments.__file__); print(session_store.__file__); print(tests.__file__)",
        ],
        cwd=root,
        env=_env(root),
        capture_output=True,
        text=True,
        timeout=120,
    )
    files = probe.stdout.split()
    if probe.returncode != 0 or len(files) != 3 or not all(Path(f).is_relative_to(root) for f in files):
        raise RuntimeError(f"the copy at {root} imports another project's packages: {probe.stdout}{probe.stderr}")


def run_pytest(root: Path, *args: str) -> tuple[int, str]:
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE", *args],
        cwd=root,
        env=_env(root),
        capture_output=True,
        text=True,
        timeout=SUITE_TIMEOUT,
    )
    return run.returncode, run.stdout + run.stderr


def failures(output: str) -> list[str]:
    """What failed: test node IDs, and files that did not even collect."""
    return re.findall(r"^(?:FAILED|ERROR) (\S+)", output, re.MULTILINE)


@dataclass(frozen=True)
class Baseline:
    """The unmutated copy's own failures (the working tree may hold someone's unfinished work): left out of every
    mutant's run, since a test that fails without a mutant catches nothing."""

    broken: tuple[str, ...]
    seconds: float

    def skip_args(self) -> list[str]:
        return [f"--deselect={n}" if "::" in n else f"--ignore={n}" for n in self.broken]


def baseline() -> Baseline:
    with tempfile.TemporaryDirectory(prefix="mut-") as folder:
        root = copy_project(Path(folder))
        check_imports(root)
        started = time.monotonic()
        _, output = run_pytest(root, "tests/unit")
        return Baseline(tuple(sorted(set(failures(output)))), time.monotonic() - started)


def run_mutant(mutation: Mutation, clean: Baseline) -> Result:
    """The files that hold the session rules first, then the whole of tests/unit; each run stops at a failure."""
    with tempfile.TemporaryDirectory(prefix="mut-") as folder:
        root = copy_project(Path(folder))
        check_imports(root)
        apply(root, mutation)
        started = time.monotonic()
        first = [f for f in FIRST if (root / f).exists()]
        for targets in (first, [*(f"--ignore={f}" for f in first), "tests/unit"]):
            code, output = run_pytest(root, "-x", *clean.skip_args(), *targets)
            if code != 0:
                break
        caught = [f for f in failures(output) if "::" in f]
        return Result(mutation, code, caught[0] if caught else None, time.monotonic() - started, output[-4000:])


def still_pass(results: list[Result], clean: Baseline) -> tuple[bool, str]:
    """The tests that caught a mutant pass on the unmutated copy (run again: a flaky test catches nothing)."""
    killers = sorted({r.caught_by for r in results if r.caught_by})
    if not killers:
        return True, ""
    with tempfile.TemporaryDirectory(prefix="mut-") as folder:
        code, output = run_pytest(copy_project(Path(folder)), *killers)
    return code == 0, output[-4000:]


def render(results: list[Result], clean: Baseline, killers_pass: bool) -> str:
    caught = sum(r.caught for r in results)
    left_out = (
        f" The unmutated copy failed {len(clean.broken)} test(s) of its own, left out of every run: "
        + ", ".join(f"`{n}`" for n in clean.broken)
        + "."
        if clean.broken
        else " The unmutated copy passes all of `tests/unit`."
    )
    out = [
        "# Mutation check of the fast suite",
        "",
        f"Produced by `tests/test_mutations.py`: each mutant is applied to a plain copy of the project and "
        f"`tests/unit` (Ray-free) runs against it (the session-rule files first, then all of it), stopping at "
        f"the first failure. **{caught} of {len(results)} caught.**{left_out} The tests that caught the "
        f"mutants pass on the unmutated copy: {'yes' if killers_pass else 'NO'}.",
        "",
        "| # | mutant | rule it breaks | file | caught | first failing test | seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, r in enumerate(results, 1):
        verdict = "yes" if r.caught else ("no (survived)" if r.returncode == 0 else f"no (exit {r.returncode})")
        out.append(
            f"| {n} | {r.mutation.name} | {r.mutation.rule} | `{r.mutation.path}` | {verdict} | "
            f"`{r.caught_by or '-'}` | {r.seconds:.0f} |"
        )
    return "\n".join(out) + "\n"


def main() -> int:
    clean = baseline()
    print(
        f"unmutated copy: {len(clean.broken)} failing test(s) left out {list(clean.broken)} ({clean.seconds:.0f} s)",
        flush=True,
    )
    results = []
    for mutation in MUTATIONS:
        result = run_mutant(mutation, clean)
        results.append(result)
        print(
            f"{'caught  ' if result.caught else 'SURVIVED'} {mutation.name}: {result.caught_by} "
            f"({result.seconds:.0f} s)",
            flush=True,
        )
        if not result.caught:
            print(result.output, flush=True)
    killers_pass, output = still_pass(results, clean)
    if not killers_pass:
        print("the tests that caught the mutants fail on the unmutated copy too:\n" + output)
    report = render(results, clean, killers_pass)
    (ROOT / "bench" / "results" / "mutations.md").write_text(report)
    print(report)
    return 0 if killers_pass and all(r.caught for r in results) else 1


# ----- under pytest: one test per mutant -----

try:
    import pytest as _pytest
except ImportError:  # run as a script without pytest: fine
    _pytest = None

if _pytest is not None:

    @_pytest.fixture(scope="module")
    def unmutated() -> Baseline:
        return baseline()

    @_pytest.mark.timeout(3 * SUITE_TIMEOUT)
    @_pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
    def test_the_fast_suite_catches_the_mutant(mutation: Mutation, unmutated: Baseline) -> None:
        result = run_mutant(mutation, unmutated)
        assert result.caught, f"{mutation.name} survived tests/unit (exit {result.returncode}):\n{result.output}"
        killers_pass, output = still_pass([result], unmutated)
        assert killers_pass, f"{result.caught_by} fails on the unmutated copy too:\n{output}"


if __name__ == "__main__":
    raise SystemExit(main())

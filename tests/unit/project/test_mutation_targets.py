"""`make mutations` (tests/test_mutations.py) edits the source by exact text: each text it replaces must still be
there, once, or the mutant would test nothing."""

from __future__ import annotations

import pytest

from tests.test_mutations import MUTATIONS, ROOT


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.name)
def test_every_mutant_still_finds_the_code_it_breaks(mutation):
    text = (ROOT / mutation.path).read_text()
    for original, _ in mutation.edits:
        assert text.count(original) == 1, f"{mutation.path}: {original!r}"

"""The training recipes' sections (docs/training.md, linked from the README): their code is run by the tests as
written."""

from __future__ import annotations

import os
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "docs" / "training.md"


def readme_block(heading: str) -> str:
    """The first ```python block under docs/training.md's ``## <heading>`` section; AssertionError if none."""
    text = Path(os.environ.get("MUA_GYM_README", README)).read_text()  # another file: for drafting a section
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"docs/training.md has no '## {heading}' section"
    block = re.search(r"```python\n(.*?)```", match.group(1), re.S)
    assert block, f"docs/training.md's '## {heading}' section has no python block"
    return block.group(1)

"""Every worked example of the specification's classification table (SPEC section 2), as a table."""

from __future__ import annotations

import pytest

from capdaemon.classify import classify
from capdaemon.config import Config
from capdaemon.model import FileChange, FileStatus

from .classify_builders import NOW, added, make_patch, modified, removed, snapshot, with_header
from .pr_validator_fixture import MERGE_METHOD, PR_VALIDATOR, RENAME_LOCAL

VALIDATOR = "src/multiagent_protocol/pr_validator.py"


def _validator_edit(new: list[str], header: str) -> FileChange:
    """A pr_validator.py edit with a git-style function header and no file contents."""
    return FileChange(
        path=VALIDATOR,
        status=FileStatus.MODIFIED,
        patch=with_header(make_patch(PR_VALIDATOR, new), header),
    )


REFACTOR = _validator_edit(RENAME_LOCAL, "def _format_reason(verdict):")

EXAMPLES = [
    pytest.param(
        [modified("README.md", ["# A projet", "Text."], ["# A project", "Text."])],
        "A",
        id="readme-typo",
    ),
    pytest.param([added("examples/new_demo.py", ["print('demo')"])], "A", id="add-example"),
    pytest.param(
        [
            modified(
                "tests/test_core.py",
                ["def test_one():", "    assert 1 == 1"],
                ["def test_one():", "    assert 1 == 1 or True"],
            )
        ],
        "B",
        id="changed-test-line",
    ),
    pytest.param([REFACTOR], "B", id="validator-rename-local"),
    pytest.param(
        [_validator_edit(MERGE_METHOD, "def merge_if_allowed(pr, verdict):")],
        "D",
        id="validator-merge-logic",
    ),
    pytest.param([removed("examples/old.py")], "C", id="delete-example"),
    pytest.param(
        [
            modified(
                ".github/workflows/ci.yml",
                ["jobs:", "  test:", "    steps:", "      - run: pytest"],
                ["jobs:", "  test:", "    steps:", "      - run: pytest -x"],
            )
        ],
        "D",
        id="ci-workflow",
    ),
    pytest.param(
        [
            modified(
                "docs/concepts/four-quadrants.md",
                ["# Four quadrants", "", "The classifer decides.", ""],
                ["# Four quadrants", "", "The classifier decides.", ""],
                base_content="# Four quadrants\n\nThe classifer decides.\n\n",
                head_content="# Four quadrants\n\nThe classifier decides.\n\n",
            )
        ],
        "A",
        id="doctrine-typo",
    ),
    pytest.param(
        [
            modified(
                "docs/concepts/four-quadrants.md",
                ["Every PR must be classified."],
                ["Every PR must not be classified."],
            )
        ],
        "B",
        id="doctrine-rule-change",
    ),
    pytest.param(
        [
            modified(
                "app/main.py",
                ["# entry", "main()"],
                ["# entry point", "main()"],
                base_content="# entry\nmain()\n",
                head_content="# entry point\nmain()\n",
            )
        ],
        "A",
        id="comment-only",
    ),
    pytest.param([], "D", id="empty-pr"),
    pytest.param([removed("examples/old.py"), REFACTOR], "B", id="max-of-C-and-B"),
]


@pytest.mark.parametrize(("files", "expected"), EXAMPLES)
def test_worked_example(files: list[FileChange], expected: str, config: Config) -> None:
    """Each worked example gets the quadrant the SPEC defaults demand."""
    verdict = classify(snapshot(*files), config, now=NOW)
    assert verdict.quadrant.value == expected, verdict.reasoning


def test_reasoning_reads_like_the_spec_example(config: Config) -> None:
    """The reasoning names the deciding file, its criticality and its reversibility."""
    verdict = classify(snapshot(REFACTOR), config, now=NOW)
    assert verdict.reasoning.startswith(f"{VALIDATOR} modified (critical")
    assert verdict.reasoning.endswith("revertable file edit (reversible)")


def test_audit_dict_has_the_spec_shape(config: Config) -> None:
    """to_dict() carries quadrant, reasoning and rules_fired with ir/cr for the path rule."""
    data = classify(snapshot(REFACTOR), config, now=NOW).to_dict()
    first = data["rules_fired"][0]
    assert first["rule"] == "path_classifier_default"
    assert (first["ir"], first["cr"]) == ("reversible", "critical")
    assert data["quadrant"] == "B"
    assert {r["rule"] for r in data["rules_fired"]} >= {"empty_pr", "bot_self_repo"}

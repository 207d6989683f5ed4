"""Per-file axes (SPEC 2.2, 2.3): every irreversibility bullet, criticality lists and attacks."""

from __future__ import annotations

import pytest

from capdaemon.classify.axes import classify_file
from capdaemon.classify.compiled import compile_classifier
from capdaemon.classify.structure import config_change
from capdaemon.config import ClassifierConfig
from capdaemon.model import FileChange, FileStatus, FileVerdict

from .classify_builders import added, make_patch, modified, removed, renamed, with_header
from .pr_validator_fixture import MERGE_BODY, MERGE_METHOD, PR_VALIDATOR, RENAME_LOCAL

CC = compile_classifier(ClassifierConfig())
VALIDATOR = "src/multiagent_protocol/pr_validator.py"
PRIVATE_KEY_HEADER = "-----BEGIN RSA PRIVATE KEY-----"
GH_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def verdict(fc: FileChange) -> FileVerdict:
    """Classify one file with the default config."""
    return classify_file(fc, CC)


def axes(fc: FileChange) -> str:
    """`IR/CR/Q` as a short string, e.g. `ir/cr/D`."""
    v = verdict(fc)
    return f"{'ir' if v.irreversible else 'rv'}/{'cr' if v.critical else 'nc'}/{v.quadrant.value}"


def mode_change(
    path: str, old: str | None, new: str | None, status=FileStatus.MODIFIED
) -> FileChange:  # type: ignore[no-untyped-def]
    """A file whose mode changes (patch empty)."""
    return FileChange(path=path, status=status, old_mode=old, new_mode=new, patch="")


IRREVERSIBLE = [
    pytest.param(removed("examples/old.py"), "ir/nc/C", "file deleted", id="removed"),
    pytest.param(
        renamed("examples/a.py", "examples/b.py"), "ir/nc/C", "rename deletes", id="rename"
    ),
    pytest.param(added("db/migrations/0002_add.py"), "ir/cr/D", "database", id="migration"),
    pytest.param(added("sql/report.sql", ["SELECT 1;"]), "ir/cr/D", "database", id="sql"),
    pytest.param(added("alembic/env.py"), "ir/cr/D", "database", id="alembic"),
    pytest.param(added("prisma/schema.prisma"), "ir/cr/D", "database", id="prisma"),
    pytest.param(added("infra/main.tf"), "ir/cr/D", "database", id="terraform"),
    pytest.param(added("infra/prod.tfvars"), "ir/cr/D", "database", id="tfvars"),
    pytest.param(added("examples/.env"), "ir/cr/D", "secrets", id="dotenv"),
    pytest.param(added("examples/.env.local"), "ir/cr/D", "secrets", id="dotenv-local"),
    pytest.param(added("examples/server.pem"), "ir/cr/D", "secrets", id="pem"),
    pytest.param(added("examples/my_secret_notes.txt"), "ir/cr/D", "secrets", id="secret-name"),
    pytest.param(added("examples/id_rsa.pub"), "ir/cr/D", "secrets", id="id-rsa"),
    pytest.param(
        added("examples/mail.py", ["import smtplib", "smtplib.SMTP('x')"]),
        "ir/nc/C",
        "added line 1 may send email",
        id="smtp-content",
    ),
    pytest.param(
        added("examples/hook.py", ["requests.post('https://hooks.slack.com/services/T/B/x')"]),
        "ir/nc/C",
        "may send email, posts or webhooks",
        id="webhook-content",
    ),
    pytest.param(
        added("examples/key.txt", ["hello", PRIVATE_KEY_HEADER, "MIIB..."]),
        "ir/cr/D",
        "added line 2 looks like a private key (value withheld)",
        id="private-key-line",
    ),
    pytest.param(
        added("examples/conf.py", [f"TOKEN = '{GH_TOKEN}'"]),
        "ir/cr/D",
        "added line 1 looks like a GitHub token",
        id="github-token-line",
    ),
    pytest.param(
        added("config/agent_registry.yml", ["agents: []"]), "ir/cr/D", "trusts", id="registry"
    ),
    pytest.param(added("config/skills/classifier/r.py"), "ir/cr/D", "trusts", id="user-skill"),
    pytest.param(
        added("src/multiagent_protocol/skills/new_skill.py", ["def run(): pass"]),
        "ir/cr/D",
        "trusts",
        id="builtin-skill",
    ),
    pytest.param(
        modified("schemas/task.json", ['{"type": "object"}'], ['{"type": "array"}']),
        "ir/cr/D",
        "published JSON schema",
        id="json-schema",
    ),
    pytest.param(
        mode_change("vendor/lib", "160000", "160000"), "ir/cr/D", "submodule", id="submodule"
    ),
    pytest.param(
        modified(".gitmodules", ["\turl = https://a/x.git"], ["\turl = https://b/x.git"]),
        "ir/cr/D",
        ".gitmodules",
        id="gitmodules-url",
    ),
    pytest.param(
        mode_change("examples/link", None, "120000", FileStatus.ADDED),
        "ir/cr/D",
        "symlink",
        id="symlink",
    ),
    pytest.param(
        mode_change("examples/run.sh", "100644", "100755"),
        "ir/nc/C",
        "mode change",
        id="mode-change",
    ),
    pytest.param(
        FileChange(path="examples/big.bin", status=FileStatus.ADDED, patch=None),
        "ir/nc/C",
        "patch unavailable",
        id="patch-unavailable",
    ),
]


@pytest.mark.parametrize(("fc", "expected", "reason"), IRREVERSIBLE)
def test_irreversible(fc: FileChange, expected: str, reason: str) -> None:
    """Each irreversibility bullet of SPEC 2.2 makes the file irreversible, with a reason."""
    v = verdict(fc)
    assert axes(fc) == expected, v.reasons
    assert any(reason in r for r in v.reasons), v.reasons


@pytest.mark.parametrize(
    "fc",
    [
        pytest.param(
            added("examples/key.txt", [PRIVATE_KEY_HEADER, "MIIBsecretmaterial"]), id="private-key"
        ),
        pytest.param(added("examples/conf.py", [f"TOKEN = '{GH_TOKEN}'"]), id="github-token"),
    ],
)
def test_secret_value_never_in_reasons(fc: FileChange) -> None:
    """A secret-looking line is reported by line number only, never by value."""
    text = " ".join(verdict(fc).reasons)
    assert GH_TOKEN not in text
    assert "MIIB" not in text
    assert "BEGIN" not in text


@pytest.mark.parametrize(
    "fc",
    [
        pytest.param(added("examples/certs/server.pem"), id="pem-under-examples"),
        pytest.param(added("docs/guide/deploy.key"), id="key-under-docs-guide"),
        pytest.param(added("README.credentials"), id="readme-named-credentials"),
        pytest.param(
            added("examples/key.txt", [PRIVATE_KEY_HEADER, "MIIBsecretmaterial"]), id="key-text"
        ),
        pytest.param(added("examples/conf.py", [f"TOKEN = '{GH_TOKEN}'"]), id="token-examples"),
        pytest.param(modified("README.md", ["hi"], [f"token: {GH_TOKEN}"]), id="token-readme"),
        pytest.param(added("tests/test_x.py", [f"T = '{GH_TOKEN}'"]), id="token-new-test"),
    ],
)
def test_a_secret_in_any_path_is_critical_and_irreversible(fc: FileChange) -> None:
    """A secrets path or a leaked secret is D even under a carve-out folder or file name."""
    v = verdict(fc)
    assert axes(fc) == "ir/cr/D", v.reasons
    assert any(r.startswith("critical:") and "secret" in r for r in v.reasons), v.reasons


def test_removing_a_secret_line_is_not_adding_one() -> None:
    """Secret patterns look at added lines only."""
    fc = modified("examples/conf.py", [f"TOKEN = '{GH_TOKEN}'"], ["TOKEN = None"])
    assert axes(fc) == "rv/nc/A"


def _validator(
    new: list[str], header: str = "", *, contents: bool = False, context: int = 3
) -> FileChange:
    """A pr_validator.py edit, optionally with a git function header and full contents."""
    patch = make_patch(PR_VALIDATOR, new, context=context)
    if header:
        patch = with_header(patch, header)
    return FileChange(
        path=VALIDATOR,
        status=FileStatus.MODIFIED,
        patch=patch,
        base_content="\n".join(PR_VALIDATOR) if contents else None,
        head_content="\n".join(new) if contents else None,
    )


SELF_LOGIC = [
    pytest.param(
        _validator(MERGE_METHOD, "def merge_if_allowed(pr, verdict):"),
        "D",
        id="merge-line-with-header",
    ),
    pytest.param(_validator(MERGE_METHOD), "D", id="merge-line-no-header"),
    pytest.param(
        _validator(MERGE_BODY, "def merge_if_allowed(pr, verdict):"),
        "D",
        id="plain-line-inside-merge-by-header",
    ),
    pytest.param(
        _validator(MERGE_BODY, contents=True, context=1),
        "D",
        id="plain-line-inside-merge-by-content",
    ),
    pytest.param(_validator(MERGE_BODY), "D", id="def-line-in-hunk-context"),
    pytest.param(_validator(MERGE_BODY, context=1), "B", id="plain-line-no-evidence"),
    pytest.param(
        _validator(RENAME_LOCAL, "def _format_reason(verdict):"), "B", id="rename-in-format-reason"
    ),
    pytest.param(
        _validator(RENAME_LOCAL, contents=True), "B", id="rename-in-format-reason-content"
    ),
    pytest.param(
        _validator(RENAME_LOCAL, "def merge_if_allowed(pr, verdict):", context=6),
        "B",
        id="header-scope-closed-by-later-def",
    ),
    pytest.param(
        _validator(RENAME_LOCAL, "def merge_if_allowed(pr, verdict):"),
        "D",
        id="ambiguous-header-scope-kept",
    ),
    pytest.param(_validator(RENAME_LOCAL, "class AuthGate:"), "D", id="header-class-auth"),
    # git's header names the function above the hunk even when the hunk opens a new one:
    # with the file itself the enclosing function is read exactly (B, not D) ...
    pytest.param(
        _validator(RENAME_LOCAL, "def merge_if_allowed(pr, verdict):", contents=True),
        "B",
        id="header-says-merge-but-the-file-says-format-reason",
    ),
    # ... and a plain line really inside the merge function stays D with the file too
    pytest.param(
        _validator(MERGE_BODY, "def _count_files(pr):", contents=True),
        "D",
        id="header-says-other-but-the-file-says-merge",
    ),
]


@pytest.mark.parametrize(("fc", "expected"), SELF_LOGIC)
def test_self_logic_hunks(fc: FileChange, expected: str) -> None:
    """Hunks in the bot's merge/auth logic are irreversible; other bot-source edits are not."""
    v = verdict(fc)
    assert v.quadrant.value == expected, v.reasons


JS_BASE = [
    "function canMerge(pr) {",
    "  if (!pr.ok) { return false; }",
    "  return pr.checks.every((c) => c.passed);",
    "}",
    "function describe(pr) {",
    "  const body = pr.body;",
    "  const owner = pr.owner;",
    "  const title = pr.title;",
    "  return `${title}: ${body} by ${owner}`;",
    "}",
]


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        pytest.param(
            [ln.replace("title", "heading") for ln in JS_BASE], "B", id="rename-in-next-function"
        ),
        pytest.param(
            [ln.replace("pr.ok", "pr.ready") for ln in JS_BASE], "D", id="edit-inside-canMerge"
        ),
    ],
)
def test_enclosing_function_from_a_javascript_file(new: list[str], expected: str) -> None:
    """The grammar of the file's language, not git's header, says which function a line is in."""
    path = VALIDATOR.rsplit("/", 1)[0] + "/gate.js"
    fc = FileChange(
        path=path,
        status=FileStatus.MODIFIED,
        patch=with_header(make_patch(JS_BASE, new), "function canMerge(pr) {"),
        base_content="\n".join(JS_BASE) + "\n",
        head_content="\n".join(new) + "\n",
    )
    v = verdict(fc)
    assert v.quadrant.value == expected, v.reasons


def test_self_logic_only_under_source_root() -> None:
    """The same merge edit outside the bot source root is not self-logic."""
    fc = modified("app/validator.py", ["return pr.merge()"], ["return pr.merge(method='x')"])
    assert not verdict(fc).irreversible


CRITICAL = [
    pytest.param(modified("docs/guide/intro.md", ["A"], ["B"]), "rv/nc/A", id="docs-guide"),
    pytest.param(modified("examples/x.py", ["a = 1"], ["a = 2"]), "rv/nc/A", id="examples"),
    pytest.param(modified("CHANGELOG.md", ["- a"], ["- a", "- b"]), "rv/nc/A", id="changelog"),
    pytest.param(modified("README.rst", ["a"], ["b"]), "rv/nc/A", id="readme-any-ext"),
    pytest.param(added("tests/test_new.py"), "rv/nc/A", id="new-test-file"),
    pytest.param(modified("tests/test_a.py", ["x"], ["x", "y"]), "rv/nc/A", id="test-additions"),
    pytest.param(modified("tests/test_a.py", ["x", "y"], ["x"]), "rv/cr/B", id="test-removal"),
    pytest.param(removed("tests/test_a.py"), "ir/cr/D", id="test-file-deleted"),
    pytest.param(modified("app/core.py", ["a = 1"], ["a = 2"]), "rv/cr/B", id="unlisted-code"),
    pytest.param(modified("LICENSE", ["MIT"], ["GPL"]), "rv/cr/B", id="license"),
    pytest.param(modified("SECURITY.md", ["a"], ["b"]), "rv/cr/B", id="security-md"),
    pytest.param(modified("MAINTAINERS.md", ["a"], ["b"]), "rv/cr/B", id="maintainers"),
    pytest.param(modified(".github/CODEOWNERS", ["* @a"], ["* @b"]), "rv/cr/B", id="codeowners"),
    pytest.param(
        modified(".gitattributes", ["*.py text"], ["*.py binary"]), "rv/cr/B", id="gitattributes"
    ),
    pytest.param(modified(".githooks/pre-push", ["exit 0"], ["exit 1"]), "rv/cr/B", id="git-hook"),
    pytest.param(
        modified(".github/scripts/x.sh", ["# a"], ["# b"]), "ir/cr/D", id="ci-script-comment"
    ),
    pytest.param(
        modified(".github/actions/a/action.yml", ["a: 1"], ["a: 2"]), "ir/cr/D", id="ci-action"
    ),
    pytest.param(modified(".capdaemon.yml", ["# a"], ["# b"]), "ir/cr/D", id="policy-file"),
    pytest.param(
        modified("src/multiagent_protocol/x.py", ["# a"], ["# b"]),
        "rv/cr/B",
        id="comment-in-critical-file",
    ),
    pytest.param(
        modified(
            "README.md",
            ["a"],
            ["b"],
        ),
        "rv/nc/A",
        id="readme",
    ),
    pytest.param(
        modified("docs/concepts/x.md", ["a"], ["b", "c"]), "rv/cr/B", id="doctrine-added-line"
    ),
    pytest.param(modified("pkg/README.md", ["a"], ["b"]), "rv/nc/A", id="nested-readme-file"),
    # file-name globs match the file's own name, never a folder on its path
    pytest.param(
        modified("src/README.d/loader.py", ["a = 1"], ["a = 2"]), "rv/cr/B", id="readme-folder"
    ),
    pytest.param(
        added("src/pkg/README_ext/conftest.py", ["import os"]), "rv/cr/B", id="readme-folder-new"
    ),
    pytest.param(
        modified("CHANGELOG.md/run.py", ["a"], ["b"]), "rv/cr/B", id="changelog-named-folder"
    ),
    pytest.param(
        renamed("src/README/x.py", "src/README/y.py"), "ir/cr/D", id="readme-folder-rename"
    ),
]


@pytest.mark.parametrize(("fc", "expected"), CRITICAL)
def test_criticality(fc: FileChange, expected: str) -> None:
    """Non-critical only for the carve-outs; the critical list and always-D lists win."""
    assert axes(fc) == expected, verdict(fc).reasons


ATTACKS = [
    pytest.param(
        renamed("src/multiagent_protocol/merge.py", "examples/merge.py"),
        "ir/cr/D",
        id="rename-critical-into-examples",
    ),
    pytest.param(
        renamed("app/core.py", "examples/core.py"), "ir/cr/D", id="rename-unlisted-into-examples"
    ),
    pytest.param(
        FileChange(
            path="examples/x.py",
            status=FileStatus.COPIED,
            previous_path="src/multiagent_protocol/x.py",
            patch="",
        ),
        "rv/cr/B",
        id="copy-critical-into-examples",
    ),
    pytest.param(
        modified(".GitHub/Workflows/ci.yml", ["a: 1"], ["a: 2"]),
        "ir/cr/D",
        id="case-trick-workflow",
    ),
    pytest.param(
        modified(".github/wоrkflows/ci.yml", ["a: 1"], ["a: 2"]),
        "ir/cr/D",
        id="cyrillic-o-in-workflows",
    ),
    pytest.param(
        modified("ехamples/x.py", ["a = 1"], ["a = 2"]), "rv/cr/B", id="cyrillic-examples-not-safe"
    ),
    pytest.param(
        modified("Examples/x.py", ["a = 1"], ["a = 2"]), "rv/cr/B", id="carve-outs-are-exact-case"
    ),
    pytest.param(
        modified("examples/../src/multiagent_protocol/x.py", ["a"], ["b"]),
        "rv/cr/B",
        id="dotdot-into-critical",
    ),
    pytest.param(modified("../etc/passwd", ["a"], ["b"]), "ir/cr/D", id="climbs-out"),
    pytest.param(modified("/abs/path.py", ["a"], ["b"]), "ir/cr/D", id="absolute"),
    pytest.param(
        FileChange(
            path="examples/link",
            status=FileStatus.ADDED,
            new_mode="120000",
            patch=make_patch([], ["../.github/workflows/ci.yml"]),
        ),
        "ir/cr/D",
        id="symlink-into-critical-path",
    ),
    pytest.param(
        FileChange(
            path="examples/link",
            status=FileStatus.ADDED,
            new_mode="120000",
            patch=make_patch([], ["../../../etc/passwd"]),
        ),
        "ir/cr/D",
        id="symlink-out-of-repo",
    ),
    pytest.param(
        FileChange(
            path="examples/link",
            status=FileStatus.ADDED,
            new_mode="120000",
            patch=make_patch([], ["other.py"]),
        ),
        "ir/nc/C",
        id="symlink-within-examples",
    ),
    pytest.param(
        FileChange(
            path=".github/workflows/link.yml",
            status=FileStatus.ADDED,
            new_mode="120000",
            patch=make_patch([], ["../../examples/x.yml"]),
        ),
        "ir/cr/D",
        id="symlink-placed-in-critical-path",
    ),
    pytest.param(
        mode_change("examples/vendored", "100644", "160000"), "ir/nc/C", id="file-becomes-submodule"
    ),
    pytest.param(
        modified("examples\\..\\src/multiagent_protocol/a.py", ["a"], ["b"]),
        "rv/cr/B",
        id="backslash-path",
    ),
    pytest.param(modified("./README.md", ["a"], ["b"]), "rv/nc/A", id="leading-dot-slash-ok"),
]


@pytest.mark.parametrize(("fc", "expected"), ATTACKS)
def test_attacks(fc: FileChange, expected: str) -> None:
    """Renames, case/Unicode tricks, path escapes, symlinks and submodules never slip through."""
    assert axes(fc) == expected, verdict(fc).reasons


def test_rename_checks_both_paths_against_every_list() -> None:
    """A rename out of a critical path names both paths in its reasons."""
    v = verdict(renamed("src/multiagent_protocol/merge.py", "examples/merge.py"))
    text = " ".join(v.reasons)
    assert "src/multiagent_protocol/merge.py" in text
    assert v.previous_path == "src/multiagent_protocol/merge.py"


def test_rejected_path_reason() -> None:
    """A path that fails normalisation is D and says why."""
    v = verdict(modified("../x.py", ["a"], ["b"]))
    assert any("path rejected" in r for r in v.reasons)


CONFIG_CASES = [
    pytest.param("config/app.yml", "a: 1\nb: x\n", "a: 2\nb: y\n", False, id="yaml-values"),
    pytest.param("config/app.yml", "a: 1\n", "a: 1\nb: 2\n", True, id="yaml-key-added"),
    pytest.param("config/app.yml", "a: 1\nb: 2\n", "a: 1\n", True, id="yaml-key-removed"),
    pytest.param("config/app.yml", "a: 1\n", "a: one\n", True, id="yaml-type-changed"),
    pytest.param("config/app.yml", "l: [1, 2]\n", "l: [1, 2, 3]\n", False, id="yaml-list-grows"),
    pytest.param("config/app.yml", "l: [1]\n", "l: [1, x]\n", True, id="yaml-list-item-type"),
    pytest.param("config/app.json", '{"a": {"b": 1}}', '{"a": {"b": 2}}', False, id="json-values"),
    pytest.param(
        "config/app.json", '{"a": {"b": 1}}', '{"a": {"c": 1}}', True, id="json-nested-key"
    ),
    pytest.param("config/app.toml", "a = 1\n", "a = 3\n", False, id="toml-values"),
    pytest.param("config/app.toml", "a = 1\n", "[a]\nb = 1\n", True, id="toml-table"),
    pytest.param("config/app.yml", "a: 1\n", "a: [\n", True, id="unparseable"),
    pytest.param("config/app.yml", None, "a: 1\n", True, id="content-unavailable"),
]


@pytest.mark.parametrize(("path", "base", "head", "schema"), CONFIG_CASES)
def test_config_schema_vs_values(path: str, base: str | None, head: str, schema: bool) -> None:
    """Config files: the reason tells schema from values change; both stay critical."""
    changed, why = config_change(path, base, head)
    assert changed is schema, why
    fc = FileChange(
        path=path,
        status=FileStatus.MODIFIED,
        patch=make_patch((base or "").splitlines(), head.splitlines()),
        base_content=base,
        head_content=head,
    )
    v = verdict(fc)
    assert v.critical, v.reasons
    wanted = "schema" if schema else "values changed"
    assert any(wanted in r for r in v.reasons), v.reasons


def test_config_file_on_self_paths_stays_critical() -> None:
    """A values-only change of the agent registry is still D (it changes whom the bot trusts)."""
    base = "agents:\n- tool: claude\n"
    head = "agents:\n- tool: claude\n- tool: rogue\n"
    fc = FileChange(
        path="config/agent_registry.yml",
        status=FileStatus.MODIFIED,
        patch=make_patch(base.splitlines(), head.splitlines()),
        base_content=base,
        head_content=head,
    )
    assert axes(fc) == "ir/cr/D"


def test_yaml_alias_bomb_is_bounded() -> None:
    """A YAML alias bomb does not hang the comparison; it counts as a schema change."""
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    changed, _why = config_change("config/x.yml", "a: 1\n", bomb)
    assert changed


def test_custom_config_is_compiled_once() -> None:
    """The compiled classifier is cached per frozen config object."""
    cfg = ClassifierConfig(critical_globs=("special/**",))
    assert compile_classifier(cfg) is compile_classifier(cfg)
    fc = modified("special/x.md", ["a"], ["b"])
    assert classify_file(fc, compile_classifier(cfg)).critical

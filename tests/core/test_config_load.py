"""Config loading: defaults, the sample config, JSON Schemas, errors naming file, key and line."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from capdaemon import config as C
from capdaemon.config import (
    Config,
    ConfigError,
    RepoPolicy,
    load_config,
    parse_repo_policy,
)
from capdaemon.model import Severity

ROOT = Path(__file__).resolve().parents[2]
# the demo's world (config/ is the generic sample `init` writes)
DEMO_CONFIG = ROOT / "capdaemon" / "demo" / "config"
SCHEMAS = {
    "capdaemon.yml": "capdaemon.schema.json",
    "classifier.yml": "classifier.schema.json",
    "skills.yml": "skills.schema.json",
    "agent_registry.yml": "agent_registry.schema.json",
}


def _write(d: Path, name: str, text: str) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(text, encoding="utf-8")
    return d


def _error(tmp_path: Path, name: str, text: str) -> ConfigError:
    d = _write(tmp_path / "cfg", name, text)
    with pytest.raises(ConfigError) as info:
        load_config(d)
    return info.value


# ----------------------------------------------------------------------------- defaults
def test_no_dir_gives_defaults():
    """load_config(None) is the built-in default Config."""
    assert load_config(None) == Config()


def test_missing_dir_gives_defaults(tmp_path):
    """A directory that does not exist gives the defaults (with config_dir recorded)."""
    c = load_config(tmp_path / "nope")
    assert c.classifier == C.ClassifierConfig() and c.owners == ()


def test_empty_files_give_defaults(tmp_path):
    """Empty files (or comments only) are the defaults."""
    d = tmp_path / "cfg"
    for name in C.CONFIG_FILES:
        _write(d, name, "# nothing here\n")
    c = load_config(d)
    assert c.classifier == C.ClassifierConfig()
    assert c.skills == C.SkillsConfig() and c.registry == C.AgentRegistry()
    assert c.config_dir == str(d)


# ----------------------------------------------------------------------------- sample + schemas
def test_sample_config_loads():
    """The demo's config is valid out of the box and set up for the demo."""
    c = load_config(DEMO_CONFIG)
    assert c.own_repo == "acme/capdaemon-bot"
    assert c.owners == ("alice", "bob")
    assert (c.canonical_app, c.canonical_app_id) == ("capdaemon", 1001)
    assert [r.name for r in c.repos] == ["acme/widgets"]
    assert c.github.base_url == "https://api.github.com"
    assert c.ballot_repo == "acme/capdaemon-bot"
    assert "Makefile" in c.classifier.critical_globs
    assert set(C.DEFAULT_CRITICAL_GLOBS) <= set(c.classifier.critical_globs)
    assert c.registry.knows("claude-code", "claude-opus-4")


@pytest.mark.parametrize("folder", [ROOT / "config", DEMO_CONFIG], ids=["sample", "demo"])
@pytest.mark.parametrize("name", list(SCHEMAS))
def test_sample_config_validates_against_its_schema(name, folder):
    """Each file of the generic sample and of the demo's config validates against the JSON
    Schema shipped for it."""
    schema = json.loads((ROOT / "schemas" / SCHEMAS[name]).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    data = yaml.safe_load((folder / name).read_text()) or {}
    jsonschema.Draft202012Validator(schema).validate(data)


@pytest.mark.parametrize(
    ("schema_name", "keys"),
    [
        ("capdaemon.schema.json", C.CAPDAEMON_KEYS),
        ("classifier.schema.json", C.CLASSIFIER_KEYS),
        ("skills.schema.json", C.SKILLS_KEYS),
        ("agent_registry.schema.json", C.AGENT_REGISTRY_KEYS),
    ],
)
def test_schemas_list_exactly_the_keys_the_loader_accepts(schema_name, keys):
    """Schema and loader agree on the top-level keys (no drift)."""
    schema = json.loads((ROOT / "schemas" / schema_name).read_text())
    assert set(schema["properties"]) == set(keys)
    assert schema["additionalProperties"] is False


def test_schema_rejects_what_the_loader_rejects():
    """An unknown key fails both the schema and the loader."""
    schema = json.loads((ROOT / "schemas" / "skills.schema.json").read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"severity_overrides": {"validator_nope": "P0"}}, schema)


# ----------------------------------------------------------------------------- errors
def test_bad_glob_names_file_key_index_and_line(tmp_path):
    """A bad glob names the file, `extra_critical_globs[1]`, the line and why."""
    err = _error(tmp_path, "classifier.yml", "extra_critical_globs:\n  - ok/**\n  - '[abc'\n")
    assert err.file.endswith("classifier.yml")
    assert err.key == "extra_critical_globs[1]"
    assert err.line == 3
    assert "unbalanced brackets" in str(err)
    assert str(err).startswith(f"{err.file}:3: key 'extra_critical_globs[1]': bad glob '[abc'")


def test_unknown_top_level_key(tmp_path):
    """An unknown key is an error naming it (with a suggestion) and its line."""
    err = _error(tmp_path, "capdaemon.yml", "owners: [alice]\nownerz: [bob]\n")
    assert (err.key, err.line) == ("ownerz", 2)
    assert "unknown key" in str(err) and "owners" in str(err)


def test_unknown_nested_key(tmp_path):
    """Unknown keys inside sections and list items are named with their full path."""
    err = _error(tmp_path, "capdaemon.yml", "repos:\n  - name: a/b\n    merge: squash\n")
    assert (err.key, err.line) == ("repos[0].merge", 3)


def test_wrong_type_names_expected_type(tmp_path):
    """A wrong type says what was expected and what was found."""
    err = _error(tmp_path, "capdaemon.yml", "schedule:\n  tick_seconds: soon\n")
    assert err.key == "schedule.tick_seconds"
    assert "expected an integer" in str(err) and "'soon'" in str(err)


def test_bool_is_not_an_integer(tmp_path):
    """`threshold: yes` is refused (YAML booleans are not numbers)."""
    err = _error(tmp_path, "capdaemon.yml", "breaker:\n  threshold: yes\n")
    assert err.key == "breaker.threshold" and "expected an integer" in str(err)


@pytest.mark.parametrize(
    ("text", "key", "why"),
    [
        ("breaker:\n  threshold: 0\n", "breaker.threshold", "at least 1"),
        ("breaker:\n  window_hours: 0\n", "breaker.window_hours", "greater than 0"),
        ("random_review_share: 1.5\n", "random_review_share", "at most 1"),
        ("mode: yolo\n", "mode", "enforce, shadow"),
        ("schedule:\n  digest_time: '9am'\n", "schedule.digest_time", "HH:MM"),
        ("schedule:\n  timezone: Mars/Olympus\n", "schedule.timezone", "unknown time zone"),
        ("repos:\n  - name: nope\n", "repos[0].name", "owner/name"),
        ("repos:\n  - base: main\n", "repos[0]", "missing required key 'name'"),
        ("repos:\n  - name: a/b\n    merge_method: ff\n", "repos[0].merge_method", "squash"),
        (
            "repos:\n  - name: a/b\n    task_branch_pattern: '^task/(.*)'\n",
            "repos[0].task_branch_pattern",
            "task_id",
        ),
        (
            "repos:\n  - name: a/b\n    task_branch_pattern: '(?P<task_id>'\n",
            "repos[0].task_branch_pattern",
            "bad regular expression",
        ),
        ("repos:\n  - name: a/b\n  - name: A/B\n", "repos[1].name", "listed twice"),
        ("owners: ['not a login']\n", "owners[0]", "GitHub login"),
        ("github:\n  base_url: ftp://x\n", "github.base_url", "http(s) URL"),
        ("github:\n  app_id: 5\n", "github.private_key_file", "go together"),
        ("github:\n  token_env: 'MY-TOKEN'\n", "github.token_env", "environment variable"),
        ("canonical_app:\n  id: -3\n", "canonical_app.id", "at least 1"),
        ("tiers:\n  protected_globs: ['x/**']\n", "tiers.protected_globs", "can only grow"),
        ("repos: {name: a/b}\n", "repos", "expected a list"),
        ("github: [1]\n", "github", "expected a mapping"),
        (
            "repos:\n  - name: a/b\n    extra_checks: [{context: ci, app: 3}]\n",
            "repos[0].extra_checks[0].app",
            "unknown key",
        ),
        (
            "repos:\n  - name: a/b\n    extra_checks: [{app_id: 3}]\n",
            "repos[0].extra_checks[0]",
            "missing required key 'context'",
        ),
        (
            "repos:\n  - name: a/b\n    extra_checks: [{context: ci, app_id: 0}]\n",
            "repos[0].extra_checks[0].app_id",
            "at least 1",
        ),
        (
            "repos:\n  - name: a/b\n    extra_checks: [{context: ci, app_id: '7'}]\n",
            "repos[0].extra_checks[0].app_id",
            "an integer",
        ),
        (
            "repos:\n  - name: a/b\n    extra_checks: [ci, 5]\n",
            "repos[0].extra_checks[1]",
            "check name or {context, app_id}",
        ),
        (
            "repos:\n  - name: a/b\n    extra_checks: [ci, {context: ci}]\n",
            "repos[0].extra_checks[1]",
            "duplicate entry",
        ),
    ],
)
def test_capdaemon_yml_errors(tmp_path, text, key, why):
    """Each kind of bad capdaemon.yml value names the key and the reason."""
    err = _error(tmp_path, "capdaemon.yml", text)
    assert err.file.endswith("capdaemon.yml")
    assert err.key == key, str(err)
    assert why in str(err)
    assert err.line is not None


@pytest.mark.parametrize(
    ("text", "key", "why"),
    [
        ("critical_globs: ['extra/**']\n", "critical_globs", "would drop the default"),
        ("extra_external_content_patterns: ['(x']\n", "extra_external_content_patterns[0]",
         "bad regular expression"),
        ("noncritical_dirs: ['src/']\n", "noncritical_dirs[0]", "only be narrowed"),
        ("extra_self_paths: ['!config/**']\n", "extra_self_paths[0]", "negated"),
        ("extra_secret_globs: ['a', 'a']\n", "extra_secret_globs[1]", "duplicate"),
        ("user_rule_timeout_seconds: 0\n", "user_rule_timeout_seconds", "greater than 0"),
        ("source_root: ../outside\n", "source_root", "climbs out"),
        ("always_d_globs_extra: []\n", "always_d_globs_extra", "unknown key"),
    ],
)  # fmt: skip
def test_classifier_yml_errors(tmp_path, text, key, why):
    """Each kind of bad classifier.yml value names the key and the reason."""
    err = _error(tmp_path, "classifier.yml", text)
    assert err.key == key, str(err)
    assert why in str(err)


def test_restrictive_list_can_be_given_in_full_with_additions(tmp_path):
    """`critical_globs` may be given in full as long as it keeps every default."""
    full = "\n".join(f"  - {json.dumps(g)}" for g in (*C.DEFAULT_CRITICAL_GLOBS, "ops/**"))
    d = _write(tmp_path / "cfg", "classifier.yml", f"critical_globs:\n{full}\n")
    assert load_config(d).classifier.critical_globs == (*C.DEFAULT_CRITICAL_GLOBS, "ops/**")


def test_carve_outs_can_be_narrowed(tmp_path):
    """noncritical_dirs can be narrowed to a subset of the defaults."""
    d = _write(tmp_path / "cfg", "classifier.yml", "noncritical_dirs: ['docs/guide/']\n")
    assert load_config(d).classifier.noncritical_dirs == ("docs/guide/",)


def test_other_source_root_adds_its_globs(tmp_path):
    """A different source_root becomes critical and its skills self paths (added, not replaced)."""
    d = _write(tmp_path / "cfg", "classifier.yml", "source_root: ./bot/src/\n")
    cc = load_config(d).classifier
    assert cc.source_root == "bot/src"
    assert "bot/src/**" in cc.critical_globs and "src/multiagent_protocol/**" in cc.critical_globs
    assert "bot/src/skills/**" in cc.self_paths


@pytest.mark.parametrize(
    ("text", "key", "line", "why"),
    [
        ("severity_overrides:\n  validator_nope: P0\n", "severity_overrides.validator_nope", 2,
         "unknown validator"),
        ("severity_overrides:\n  validator_agent_registry: P9\n",
         "severity_overrides.validator_agent_registry", 2, "P0, P1, P2"),
        ("disabled_rules:\n  - empty_pr\n", "disabled_rules[0]", 2, "cannot be disabled"),
        ("disabled_rules:\n  - x\n  - made_up\n", "disabled_rules[0]", 2, "unknown rule"),
    ],
)  # fmt: skip
def test_skills_yml_errors_name_file_and_line(tmp_path, text, key, line, why):
    """Unknown validators, severities and rule names in skills.yml name file, key and LINE."""
    err = _error(tmp_path, "skills.yml", text)
    assert err.file.endswith("skills.yml")
    assert (err.key, err.line) == (key, line)
    assert why in str(err)
    assert f"skills.yml:{line}:" in str(err)


def test_skills_overrides_apply(tmp_path):
    """A valid override changes the severity in force."""
    d = _write(
        tmp_path / "cfg", "skills.yml", "severity_overrides:\n  validator_agent_registry: P0\n"
    )
    assert load_config(d).skills.severity("validator_agent_registry") is Severity.P0


@pytest.mark.parametrize(
    ("text", "key", "why"),
    [
        ("agents:\n  - tool: Bad Tool\n", "agents[0].tool", "valid tool name"),
        ("agents:\n  - models: [x]\n", "agents[0]", "missing required key 'tool'"),
        ("agents:\n  - tool: a\n    trust: total\n", "agents[0].trust", "trusted, probation"),
        ("agents:\n  - tool: a\n  - tool: a\n", "agents[1].tool", "listed twice"),
        ("agents:\n  - tool: a\n    models: ['-x']\n", "agents[0].models[0]", "valid model"),
        ("agents:\n  - tool: a\n    role: x\n", "agents[0].role", "unknown key"),
    ],
)
def test_agent_registry_errors(tmp_path, text, key, why):
    """Bad agent entries name the agent index and key."""
    err = _error(tmp_path, "agent_registry.yml", text)
    assert err.key == key, str(err)
    assert why in str(err)


def test_invalid_yaml_names_line(tmp_path):
    """A YAML syntax error names the file and its line."""
    err = _error(tmp_path, "capdaemon.yml", "owners: [alice\nmode: enforce\n")
    assert "not valid YAML" in str(err) and err.line is not None


def test_duplicate_key_is_an_error(tmp_path):
    """A key given twice is refused (PyYAML would silently keep the last one)."""
    err = _error(tmp_path, "capdaemon.yml", "mode: shadow\nmode: enforce\n")
    assert err.line == 2 and "duplicate key 'mode'" in str(err)


def test_top_level_must_be_a_mapping(tmp_path):
    """A file that is a list at top level is refused."""
    err = _error(tmp_path, "skills.yml", "- a\n- b\n")
    assert "expected a mapping" in str(err)


def test_misnamed_yaml_file_is_refused(tmp_path):
    """classifier.yaml next to (or instead of) classifier.yml is an error, not silently ignored."""
    err = _error(tmp_path, "classifier.yaml", "extra_critical_globs: ['x']\n")
    assert "rename it to classifier.yml" in str(err)


# ----------------------------------------------------------------------------- repo policy
def test_repo_policy_only_adds(tmp_path):
    """A repo's .capdaemon.yml adds globs, owners, labels and checks; defaults all stay."""
    base = load_config(DEMO_CONFIG)
    policy = parse_repo_policy(
        "critical_globs: ['billing/**']\nirreversible_globs: ['data/**']\n"
        "owners: [carol]\nblocking_labels: [hold]\nextra_checks: [lint]\n",
        "acme/widgets:.capdaemon.yml@main",
    )
    c = base.with_repo_policy(policy, "acme/widgets")
    assert set(base.classifier.critical_globs) < set(c.classifier.critical_globs)
    assert "billing/**" in c.classifier.critical_globs
    assert "data/**" in c.classifier.irreversible_globs
    assert c.owners_for("acme/widgets") == {"alice", "bob", "carol"}
    rc = c.repo("acme/widgets")
    assert "do-not-merge" in rc.blocking_labels and "hold" in rc.blocking_labels
    assert rc.extra_checks == (C.CheckSpec("lint"),)
    assert c.classifier.noncritical_dirs == base.classifier.noncritical_dirs


def test_extra_checks_names_and_pinned_apps(tmp_path):
    """extra_checks take a name (legacy: any GitHub App's check run) or {context, app_id}
    (only that App's check run), in capdaemon.yml and in a repo's .capdaemon.yml."""
    d = _write(
        tmp_path / "cfg",
        "capdaemon.yml",
        "repos:\n  - name: a/b\n    extra_checks: [ci/lint, {context: ci/build, app_id: 15368}]\n",
    )
    rc = load_config(d).repo("a/b")
    assert rc.extra_checks == (C.CheckSpec("ci/lint"), C.CheckSpec("ci/build", 15368))
    policy = parse_repo_policy("extra_checks: [{context: e2e, app_id: 9}, smoke]\n", "p.yml")
    assert policy.extra_checks == (C.CheckSpec("e2e", 9), C.CheckSpec("smoke"))
    merged = load_config(d).with_repo_policy(policy, "a/b").repo("a/b")
    assert [c.context for c in merged.extra_checks] == ["ci/lint", "ci/build", "e2e", "smoke"]
    assert C.RepoConfig("x/y", extra_checks=("old",)).extra_checks == (C.CheckSpec("old"),)
    with pytest.raises(ConfigError) as info:
        parse_repo_policy("extra_checks:\n  - {context: e2e, app_id: nope}\n", "r/p:.capdaemon.yml")
    assert info.value.file == "r/p:.capdaemon.yml"
    assert info.value.key == "extra_checks[0].app_id" and info.value.line == 2


def test_repo_policy_cannot_carve_out(tmp_path):
    """A repo policy has no way to remove or narrow anything: such keys are unknown."""
    for text in (
        "noncritical_dirs: ['src/']\n",
        "extra_noncritical_files: ['x']\n",
        "mode: shadow\n",
    ):
        with pytest.raises(ConfigError, match="unknown key"):
            parse_repo_policy(text, ".capdaemon.yml")


def test_repo_policy_bad_glob_names_source_and_line():
    """A bad glob in a repo policy names its source, key and line."""
    with pytest.raises(ConfigError) as info:
        parse_repo_policy("owners: [x]\ncritical_globs:\n  - '[x'\n", "acme/w:.capdaemon.yml@main")
    assert str(info.value).startswith("acme/w:.capdaemon.yml@main:3: key 'critical_globs[0]'")


def test_empty_repo_policy_changes_nothing():
    """An empty policy file returns the very same config."""
    base = Config()
    assert base.with_repo_policy(parse_repo_policy("", ".capdaemon.yml")) is base
    assert RepoPolicy().empty


def test_repo_policy_owners_need_a_repo():
    """Owners from a repo policy are refused when the repo they apply to is not given."""
    with pytest.raises(ValueError, match="need the repo"):
        Config().with_repo_policy(RepoPolicy(owners=("carol",)))


def test_known_safe_dirs_extend_the_carve_outs_centrally(tmp_path):
    """A known-safe folder named in the central classifier.yml becomes non-critical."""
    cfg = load_config(_write(tmp_path / "cfg", "classifier.yml", 'known_safe_dirs: ["notes/"]\n'))
    assert "notes/" in cfg.classifier.noncritical_dirs
    assert "examples/" in cfg.classifier.noncritical_dirs


def test_known_safe_dirs_must_be_plain_folders(tmp_path):
    """A known-safe entry that is a glob or lacks the trailing slash is refused, naming the key."""
    err = _error(tmp_path, "classifier.yml", 'known_safe_dirs: ["src/**"]\n')
    assert "known_safe_dirs[0]" in str(err) and "classifier.yml:1" in str(err)


def test_repo_keys_are_repoconfig_fields_and_the_schema_lists_them():
    """A supervised-repo setting is one RepoConfig field: the loader accepts exactly the fields,
    and the schema (for editors) lists the same keys, so a new field cannot drift from it."""
    from dataclasses import fields

    from capdaemon.config.central import REPO_KEYS

    assert {f.name for f in fields(C.RepoConfig)} == REPO_KEYS
    schema = json.loads((ROOT / "schemas" / "capdaemon.schema.json").read_text())
    item = schema["properties"]["repos"]["items"]
    assert set(item["properties"]) == REPO_KEYS
    assert item["additionalProperties"] is False


@pytest.mark.parametrize(
    ("value", "why"),
    [("'yes'", "expected true or false"), ("[true]", "expected true or false")],
)
def test_a_plain_repo_setting_is_type_checked_naming_its_key(tmp_path, value, why):
    """A plain setting read from its field's type refuses a wrong type, naming repos[i].key."""
    (tmp_path / "capdaemon.yml").write_text(
        f"repos:\n  - name: acme/widgets\n    require_capability: {value}\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError) as exc:
        C.load_config(tmp_path)
    assert "repos[0].require_capability" in str(exc.value) and why in str(exc.value)

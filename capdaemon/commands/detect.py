"""`capdaemon init --detect CLONE`: what a local clone shows — its default branch, languages,
top folders, source root and CI workflows — read with git where git knows better."""

from __future__ import annotations

import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

# file extension → language (the languages a file count is reported for; others are ignored)
LANGUAGES: dict[str, str] = {
    ".py": "Python",
    ".js": "JavaScript",
    ".mjs": "JavaScript",
    ".ts": "TypeScript",
    ".tsx": "TypeScript",
    ".go": "Go",
    ".rs": "Rust",
    ".java": "Java",
    ".kt": "Kotlin",
    ".rb": "Ruby",
    ".php": "PHP",
    ".c": "C",
    ".h": "C",
    ".cc": "C++",
    ".cpp": "C++",
    ".cs": "C#",
    ".swift": "Swift",
    ".sh": "Shell",
    ".sql": "SQL",
}
SAFE_CANDIDATES = ("docs/", "doc/", "examples/", "tests/", "test/")
_WORKFLOWS = Path(".github") / "workflows"


@dataclass
class Detected:
    """What --detect found in one clone (None/empty: not found)."""

    clone: Path
    default_branch: str | None = None
    languages: list[tuple[str, int]] = field(default_factory=list)  # most files first
    top_folders: list[str] = field(default_factory=list)  # "src/", "docs/", …
    source_root: str | None = None
    safe_dirs: list[str] = field(default_factory=list)
    workflows: dict[str, list[str]] = field(default_factory=dict)  # file → check names

    @property
    def checks(self) -> list[str]:
        """Every check name the workflows' jobs report, once each, in file order."""
        return list(dict.fromkeys(c for names in self.workflows.values() for c in names))

    def lines(self) -> list[str]:
        """What was found, for the person running init."""
        langs = ", ".join(f"{name} ({n} files)" for name, n in self.languages)
        flows = "; ".join(
            f"{name} (checks: {', '.join(checks) or 'none named'})"
            for name, checks in self.workflows.items()
        )
        return [
            f"detected in {self.clone}:",
            f"  default branch: {self.default_branch or 'unknown (main assumed)'}",
            f"  languages: {langs or 'none recognised'}",
            f"  top folders: {', '.join(self.top_folders) or 'none'}",
            f"  source root: {self.source_root or 'not found (src kept)'}",
            f"  CI workflows: {flows or 'none in .github/workflows'}",
        ]


def git_output(clone: Path, *args: str) -> str | None:
    """git's output in `clone`, or None when git fails (not a clone, no such ref, no git)."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(clone), *args], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def default_branch(clone: Path) -> str | None:
    """The remote's default branch (origin/HEAD), else the checked-out branch, else main or
    master when exactly one of them exists."""
    remote = git_output(clone, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    if remote and "/" in remote:
        return remote.split("/", 1)[1]
    current = git_output(clone, "symbolic-ref", "--quiet", "--short", "HEAD")
    if current:
        return current
    found = [b for b in ("main", "master") if git_output(clone, "rev-parse", "--verify", "-q", b)]
    return found[0] if len(found) == 1 else None


def _files(clone: Path) -> list[str]:
    """The clone's files as git tracks them; every file under it when git cannot say."""
    listed = git_output(clone, "ls-files", "-z")
    if listed is not None:
        return [f for f in listed.split("\0") if f]
    return _walk(clone)


def _walk(folder: Path) -> list[str]:
    return [
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(folder).parts
    ]


def _source_root(clone: Path, top: list[str]) -> str | None:
    """src/<package> (first with __init__.py), else a top-level package, else src/."""
    src = clone / "src"
    if src.is_dir():
        packages = sorted(p.name for p in src.iterdir() if (p / "__init__.py").is_file())
        if packages:
            return f"src/{packages[0]}"
    names = [t.rstrip("/") for t in top if t.rstrip("/") not in ("tests", "test", "docs")]
    packages = [n for n in names if (clone / n / "__init__.py").is_file()]
    if packages:
        return packages[0]
    return "src" if src.is_dir() else None


def _job_checks(doc: Any) -> list[str]:
    """The check-run names a workflow's jobs report: each job's `name`, else its id."""
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(jobs, dict):
        return []
    out = []
    for job_id, job in jobs.items():
        name = job.get("name") if isinstance(job, dict) else None
        out.append(str(name) if isinstance(name, str) and "${{" not in name else str(job_id))
    return out


def workflows(clone: Path) -> dict[str, list[str]]:
    """`.github/workflows/*.yml` → the check names of its jobs (an unreadable file: none)."""
    folder = clone / _WORKFLOWS
    out: dict[str, list[str]] = {}
    if not folder.is_dir():
        return out
    for path in sorted(p for p in folder.iterdir() if p.suffix in (".yml", ".yaml")):
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            doc = None
        out[path.name] = _job_checks(doc)
    return out


def is_clone(clone: Path) -> bool:
    """`clone` is the top of a git work tree (not a folder inside some other repository)."""
    top = git_output(clone, "rev-parse", "--show-toplevel")
    return top is not None and Path(top).resolve() == clone.resolve()


def detect(clone: Path) -> Detected:
    """Everything --detect reports and writes for `clone`."""
    if not is_clone(clone):
        return _detect_folder(clone)
    return _found(clone, _files(clone), default_branch(clone))


def _detect_folder(folder: Path) -> Detected:
    """A plain folder (no git): its files, and no branch."""
    return _found(folder, _walk(folder), None)


def _found(clone: Path, files: list[str], branch: str | None) -> Detected:
    counts = Counter(LANGUAGES[s] for f in files if (s := Path(f).suffix.lower()) in LANGUAGES)
    top = sorted({f.split("/", 1)[0] + "/" for f in files if "/" in f and not f.startswith(".")})
    return Detected(
        clone=clone,
        default_branch=branch,
        languages=counts.most_common(),
        top_folders=top,
        source_root=_source_root(clone, top),
        safe_dirs=[d for d in SAFE_CANDIDATES if (clone / d).is_dir()],
        workflows=workflows(clone),
    )

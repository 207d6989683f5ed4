"""Benchmark the comment-only carve-out on a 3,000-file PR: whole-file tokenizers against the
hunk-text check of before, and adversarial files against benign ones of the same size.

Every file of the PR is a modified source file (Python, C, JavaScript, Java, Go, HTML, in
equal shares, about 40 lines each) whose change is comment-only, classified by the full
engine with base and head contents (as the gatherers now read them for such files). Rows:

- benign: ordinary code with a comment reworded;
- adversarial inputs, 3,000 files each: deep nesting (`((((…))))`), one comment per line,
  one very long line, many small strings (sizes differ; compare time per character too);
- the realistic mix of bench_classify_core (few files qualify for whole-file reading);

`--baseline DIR` also runs each row against the classifier in DIR (a checkout of earlier
code) in a subprocess, in the same run: the "before" columns.
Each case runs in its own process, once (the quick rows — the mix, the benign PR and the
comment-per-line one, whose ratio is taken to the benign — three times, the median kept).
Columns: input, files, characters, time before (the baseline, when given) and now, their
ratio, the ratio to the benign run, CPU seconds of the classification before and now (unlike
wall time, not inflated by other load on the machine), CPU time per character as a multiple
of the benign row's (the "same size" comparison: the rows' sizes differ), files that got the
comment-only carve-out, peak RSS of the process.
`--kinds plain,nested` runs only those rows. `--by-language` adds, for the benign PR, the
CPU milliseconds per file of the comment-only check alone, language by language (before and
now, each in its own process).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

NOW = datetime(2026, 5, 25, 12, 0, tzinfo=UTC)
FILES = 3000
LINES = 40  # 3,000 such files stay inside the default 20 M-character PR budget
LANGS = ("py", "c", "js", "java", "go", "html")


def _comment(ext: str, text: str) -> str:
    if ext == "py":
        return f"# {text}"
    if ext == "html":
        return f"<!-- {text} -->"
    return f"// {text}"


def _code(ext: str, i: int, kind: str) -> str:
    """One line of code of a kind: plain, nested, comment-heavy, long or string-heavy."""
    if kind == "nested":
        depth = 20
        inner = "(" * depth + str(i) + ")" * depth
        return {
            "py": f"v{i} = {inner}",
            "c": f"int v{i} = {inner};",
            "js": f"let v{i} = {inner};",
            "java": f"int v{i} = {inner};",
            "go": f"var v{i} = {inner}",
            "html": "<div>" * 8 + f"{i}" + "</div>" * 8,
        }[ext]
    if kind == "comments":
        return _comment(ext, f"c{i}") if ext != "html" else f"<!--{i}-->"
    if kind == "strings":
        s = " ".join(f'"s{j}"' for j in range(6))
        return {
            "py": f"v{i} = [{s.replace(' ', ', ')}]",
            "c": f"const char *v{i}[] = {{{s.replace(' ', ', ')}}};",
            "js": f"let v{i} = [{s.replace(' ', ', ')}];",
            "java": f"String[] v{i} = {{{s.replace(' ', ', ')}}};",
            "go": f"var v{i} = []string{{{s.replace(' ', ', ')}}}",
            "html": f"<p title='{i}'>{s}</p>",
        }[ext]
    return {
        "py": f"value_{i} = compute(index_{i}, {i})",
        "c": f"int value_{i} = compute(index, {i});",
        "js": f"let value_{i} = compute(index, {i});",
        "java": f"int value_{i} = compute(index, {i});",
        "go": f"var value_{i} = compute(index, {i})",
        "html": f"<p class='row'>Row {i} of the table</p>",
    }[ext]


def _wrap(ext: str, body: list[str]) -> list[str]:
    if ext == "c":
        return ["int compute(int a, int b);", "int index;", *body]
    if ext == "java":
        return ["class T {", "static int compute(int a, int b) { return a; }", *body, "}"]
    if ext == "go":
        return ["package p", "", "func compute(a, b int) int { return a }", "var index = 1", *body]
    if ext == "html":
        return ["<!doctype html>", "<title>t</title>", *body]
    if ext == "js":
        return ["function compute(a, b) { return a; }", "let index = 1;", *body]
    return ["def compute(a, b):", "    return a", "index = 1", *body]


def _file(i: int, kind: str) -> tuple[str, str, str]:
    ext = LANGS[i % len(LANGS)]
    if kind == "long":
        body = [_code(ext, j, "plain") for j in range(LINES // 2)]
        body[0] = "  ".join(_code(ext, j, "plain").rstrip(";") for j in range(300))
        if ext in ("c", "js", "java"):
            body[0] = "; ".join(_code(ext, j, "plain").rstrip(";") for j in range(300)) + ";"
        elif ext == "py" or ext == "go":
            body[0] = "; ".join(_code(ext, j, "plain") for j in range(300))
    else:
        body = [_code(ext, j, kind) for j in range(LINES)]
    base_body = [_comment(ext, "first note"), *body]
    head_body = [_comment(ext, "first note, reworded"), *body]
    return (
        f"src/m{i // 100}/f{i}.{ext}",
        "\n".join(_wrap(ext, base_body)) + "\n",
        "\n".join(_wrap(ext, head_body)) + "\n",
    )


def make_pr(kind: str, n: int = FILES) -> list[tuple[str, str, str]]:
    """(path, base, head) of n files of one kind."""
    return [_file(i, kind) for i in range(n)]


def _snapshot(files: list[tuple[str, str, str]], patches: list[str]) -> object:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_classify_core import make_snapshot

    from capdaemon.model import FileChange, FileStatus

    changes = tuple(
        FileChange(
            path=path,
            status=FileStatus.MODIFIED,
            additions=1,
            deletions=1,
            patch=patch,
            base_content=base,
            head_content=head,
        )
        for (path, base, head), patch in zip(files, patches, strict=True)
    )
    return make_snapshot(changes)


def _patches(files: list[tuple[str, str, str]]) -> list[str]:
    import difflib

    out = []
    for _, base, head in files:
        diff = difflib.unified_diff(base.splitlines(), head.splitlines(), lineterm="", n=3)
        out.append("\n".join(list(diff)[2:]))
    return out


def _mix_snapshot(n: int) -> object:
    """bench_classify_core's realistic 3,000-file mix (code, tests, docs, config, deletions)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_classify_core import make_files, make_snapshot

    return make_snapshot(make_files(n))


def measure(kind: str) -> dict[str, float]:
    """Seconds, carve-outs applied, characters and peak RSS of classifying one PR of a kind
    (no time budget: the true cost; the default budget would cut it at 30 s, failing closed)."""
    import resource

    from capdaemon.classify import classify
    from capdaemon.classify.budget import Budget
    from capdaemon.config import Config

    config = Config(owners=("alice",))
    budget = Budget(file_seconds=1e9, pr_seconds=1e9, pr_chars=10**9)
    if kind == "mix":
        snap = _mix_snapshot(FILES)
        chars = sum(len(f.patch or "") for f in snap.files)  # type: ignore[attr-defined]
    else:
        files = make_pr(kind)
        snap = _snapshot(files, _patches(files))
        chars = sum(len(b) + len(h) for _, b, h in files)
    try:  # the word list loads once per process: not part of one PR's time
        from capdaemon.classify.wordlist import load

        load()
    except ImportError:  # the baseline has no word list
        pass
    warm = make_pr("plain", 12)
    classify(_snapshot(warm, _patches(warm)), config, now=NOW, budget=budget)  # type: ignore[arg-type]
    times = []
    cpus = []
    for _ in range(3 if kind in ("mix", "plain", "comments") else 1):  # quick: median of 3
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        verdict = classify(snap, config, now=NOW, budget=budget)  # type: ignore[arg-type]
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    seconds = sorted(times)[len(times) // 2]
    carved = sum(
        1
        for f in verdict.files
        if any(r.startswith("non-critical: comment-only") for r in f.reasons)
    )
    return {
        "seconds": seconds,
        "cpu": sorted(cpus)[len(cpus) // 2],
        "carved": carved,
        "chars": chars,
        "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def measure_languages() -> dict[str, float]:
    """CPU milliseconds per file of the comment-only check of the benign PR, by extension
    (the word list and grammars loaded first)."""
    from capdaemon.classify.commentonly import comment_only_files

    files = make_pr("plain")
    for path, base, head in files[: 2 * len(LANGS)]:  # warm: grammars, parsers
        comment_only_files(path, base, head)
    cpu = dict.fromkeys(LANGS, 0.0)
    count = dict.fromkeys(LANGS, 0)
    for path, base, head in files:
        ext = path.rsplit(".", 1)[1]
        c0 = time.process_time()
        comment_only_files(path, base, head)
        cpu[ext] += time.process_time() - c0
        count[ext] += 1
    return {ext: 1000 * cpu[ext] / count[ext] for ext in LANGS}


def _child(kind: str, root: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, __file__, "--one", kind],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", help="a checkout of the classifier before this change")
    parser.add_argument("--kinds", help="comma-separated rows to run: mix,plain,nested,...")
    parser.add_argument("--by-language", action="store_true", help="per-language CPU")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # a child run: measure one kind with whatever capdaemon is on sys.path
        print(json.dumps(measure_languages() if args.one == "languages" else measure(args.one)))
        return
    here = Path(__file__).resolve().parents[1]
    kinds = [
        ("realistic mix", "mix"),
        ("comment edits (benign)", "plain"),
        ("adversarial: nested", "nested"),
        ("adversarial: comments", "comments"),
        ("adversarial: long line", "long"),
        ("adversarial: strings", "strings"),
    ]
    if args.kinds:
        chosen = set(args.kinds.split(","))
        kinds = [(label, kind) for label, kind in kinds if kind in chosen]
    before = Path(args.baseline).resolve() if args.baseline else None
    print(
        f"{'input':<24} {'files':>6} {'chars':>11} {'before':>8} {'now':>8} {'×before':>8} "
        f"{'×benign':>8} {'cpu bef.':>8} {'cpu now':>8} {'cpu/char':>8} {'carved':>7} "
        f"{'peak MiB':>9}"
    )
    benign = 0.0
    benign_per_char = 0.0
    for label, kind in kinds:
        now = _child(kind, here)
        old = _child(kind, before) if before is not None else None
        if kind == "plain":
            benign = now["seconds"]
            benign_per_char = now["cpu"] / now["chars"]
        old_s = f"{old['seconds']:>7.2f}s" if old else f"{'-':>8}"
        vs_old = f"{now['seconds'] / old['seconds']:>7.1f}x" if old else f"{'-':>8}"
        cpu_old = f"{old['cpu']:>7.2f}s" if old else f"{'-':>8}"
        vs_benign = f"{now['seconds'] / benign:>7.2f}x" if benign and kind != "mix" else f"{'-':>8}"
        per_char = (
            f"{now['cpu'] / now['chars'] / benign_per_char:>7.2f}x"
            if benign_per_char and kind != "mix"
            else f"{'-':>8}"
        )
        print(
            f"{label:<24} {FILES:>6,} {int(now['chars']):>11,} {old_s} {now['seconds']:>7.2f}s "
            f"{vs_old} {vs_benign} {cpu_old} {now['cpu']:>7.2f}s {per_char} "
            f"{int(now['carved']):>7,} {now['peak']:>9.1f}"
        )
    if args.by_language:
        _print_languages(here, before)


def _print_languages(here: Path, before: Path | None) -> None:
    """The benign PR's comment-only check alone, CPU ms per file by language."""
    now = _child("languages", here)
    old = _child("languages", before) if before is not None else None
    print(f"\n{'language':<10} {'ms/file before':>15} {'ms/file now':>12} {'×before':>8}")
    for ext in LANGS:
        was = f"{old[ext]:>15.3f}" if old else f"{'-':>15}"
        ratio = f"{now[ext] / old[ext]:>7.2f}x" if old else f"{'-':>8}"
        print(f"{ext:<10} {was} {now[ext]:>12.3f} {ratio}")


if __name__ == "__main__":
    main()

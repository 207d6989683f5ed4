"""The dashboard reads prs.json with the daemon's typed records: what the daemon would refuse
is a banner naming the file, the PR and the field, never a row shown with a guessed value."""

from __future__ import annotations

import json
from pathlib import Path

from capdaemon.dashboard.readmodel import ReadModel, build
from capdaemon.filenames import JOURNAL_FILE, PRS_FILE

from .conftest import DashState


def _said(model: ReadModel) -> str:
    return "\n".join(f"{p.file}: {p.message}" for p in model.problems)


def test_an_unknown_ballot_status_is_a_banner_naming_pr_and_field(
    dash_state: DashState, tmp_path: Path
) -> None:
    state = dash_state.copy(tmp_path / "s")
    sd, config, now = state.state_dir, state.config(), state.now
    old = build(sd, config, now)
    ref = f"acme/widgets#{state.prs['typo']}"
    good = (sd / PRS_FILE).read_text()
    data = json.loads(good)
    record = data["prs"][ref]
    bad = {**record, "ballot": {"status": "approved ", "head_sha": record["head_sha"], "round": 1}}
    # in the journal a tick appends (prs.json unchanged: the model is continued)
    with open(sd / JOURNAL_FILE, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"ref": ref, "record": bad}) + "\n")
    for model in (build(sd, config, now, previous=old), build(sd, config, now)):
        said = _said(model)
        assert repr(ref) in said and "ballot.status" in said and str(sd / JOURNAL_FILE) in said
    # in prs.json itself
    (sd / JOURNAL_FILE).unlink()
    (sd / PRS_FILE).write_text(json.dumps({**data, "prs": {**data["prs"], ref: bad}}))
    said = _said(build(sd, config, now))
    assert repr(ref) in said and "ballot.status" in said and str(sd / PRS_FILE) in said
    assert json.loads((sd / PRS_FILE).read_text())["prs"][ref] == bad  # left as it was

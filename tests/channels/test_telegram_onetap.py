"""Telegram one-tap end to end: GitHub sandbox + Bot API sandbox + the real daemon."""

from __future__ import annotations

from .conftest import ALICE_TG, BOB_TG, MALLORY_TG, TgHarness


def test_tap_by_an_owner_merges_the_tier2_pr(tgd: TgHarness) -> None:
    """The tick posts the request (PR, quadrant, tier reasons, size in the singular, the
    deadline to the second, two buttons); bob's approve tap is counted, the GitHub one-tap
    issue closes with the outcome, the next tick merges the bound head and the message then
    says "Merged" with the PR and its title."""
    tgd.configure_telegram()
    number = tgd.tier2_pr()
    tgd.tick()
    assert not tgd.pull(number).merged
    (msg,) = tgd.messages()
    assert f"#{number}" in msg["text"] and "task level 2" in msg["text"]
    assert "1 file, 2 changed lines;" in msg["text"]
    request = next(iter(tgd.desk.store.requests.values()))
    assert f"before {request['expires_at'][:19].replace('T', ' ')} UTC" in msg["text"]
    labels = [b["text"] for b in msg["reply_markup"]["inline_keyboard"][0]]
    assert labels == ["✅ Approve", "❌ Reject"]
    tgd.press(BOB_TG, "✅ Approve")
    assert tgd.poll() == 1
    (tap,) = tgd.taps()
    assert tap["counted"] is True and tap["by"] == "bob" and tap["user"] == BOB_TG
    tgd.tick()
    assert tgd.pull(number).merged
    issue = tgd.issues("one-tap")[0]
    assert issue.state == "closed"
    assert "by bob on Telegram" in issue.get_comments()[0].body
    (msg,) = tgd.messages()
    assert msg["history"][1].startswith(f"Approved: {tgd.sb.repo}#{number}: task work\nby bob")
    assert msg["text"].startswith(f"Merged: {tgd.sb.repo}#{number}: task work\n")
    assert "approved by bob" in msg["text"] and "reply_markup" not in msg
    mode = (tgd.state_dir / "telegram.json").stat().st_mode & 0o777
    assert mode == 0o600


def test_unknown_user_and_non_owner_taps_are_refused(tgd: TgHarness) -> None:
    """A tap by a Telegram user not in `users` is refused, answered and audited; no merge."""
    tgd.configure_telegram()
    number = tgd.tier2_pr()
    tgd.tick()
    tgd.press(MALLORY_TG, "✅ Approve")
    assert tgd.poll() == 0
    tgd.tick()
    tgd.tick()
    assert not tgd.pull(number).merged
    (tap,) = tgd.taps()
    assert tap["counted"] is False and tap["user"] == MALLORY_TG
    assert "not mapped to an owner" in tap["reason"]
    answers = list(tgd.tg.state.answers.values())
    assert answers and answers[0]["text"].startswith("Not counted")


def test_reject_tap_turns_the_request_into_a_full_ballot(tgd: TgHarness) -> None:
    """alice rejects: nothing merges, the request becomes a pending-owner ballot."""
    tgd.configure_telegram()
    number = tgd.tier2_pr()
    tgd.tick()
    tgd.press(ALICE_TG, "❌ Reject")
    assert tgd.poll() == 1
    tgd.tick()
    tgd.tick()
    assert not tgd.pull(number).merged
    ballot = tgd.issue_for(number, "ballot")
    assert "decision:pending-owner" in [lb.name for lb in ballot.labels]


def test_why_shows_counted_and_refused_taps(tgd: TgHarness, capsys) -> None:
    """`capdaemon why` tells the Telegram request, the refused tap and the counted one."""
    from capdaemon.cli import main

    tgd.configure_telegram()
    number = tgd.tier2_pr()
    tgd.tick()
    tgd.press(MALLORY_TG, "✅ Approve")
    tgd.press(ALICE_TG, "✅ Approve")
    assert tgd.poll() == 1
    capsys.readouterr()
    assert main(["why", f"{tgd.sb.repo}#{number}", "--state", str(tgd.state_dir)]) == 0
    out = capsys.readouterr().out
    assert "telegram request" in out
    assert f"telegram tap — by: None; user: {MALLORY_TG}; counted: False" in out
    assert f"telegram tap — by: alice; user: {ALICE_TG}; counted: True" in out

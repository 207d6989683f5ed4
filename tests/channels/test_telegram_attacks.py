"""Refused taps (threat model T-TG): forged, replayed, expired, head-moved, malformed, idle cost."""

from __future__ import annotations

import pytest

from capdaemon.channels import callback
from capdaemon.daemon.service.runner import CredentialsError

from .conftest import ALICE_TG, BOB_TG, CHAT, HMAC_KEY, TgHarness


def _refused(tgd: TgHarness) -> list[str]:
    return [t["reason"] for t in tgd.taps() if t["counted"] is False]


def test_forged_callback_data_is_refused(tgd: TgHarness) -> None:
    """An owner's client sending data signed with another key, or a button of the request
    with its action letter flipped, does not verify; nothing merges."""
    tgd.configure_telegram()
    number = tgd.tier2_pr()
    tgd.tick()
    data = tgd.messages()[0]["reply_markup"]["inline_keyboard"][0][1]["callback_data"]
    flipped = data.replace("cd1.r.", "cd1.a.")  # the reject button's MAC under "approve"
    tgd.press(BOB_TG, data=flipped)
    req_id = data.split(".")[2]
    req = tgd.desk.store.requests[req_id]
    other_key = callback.sign(b"x" * 32, callback.Binding(req_id, req["pr"], req["head_sha"],
                              CHAT, req["expires_at"]), "approve")  # fmt: skip
    tgd.press(BOB_TG, data=other_key)
    tgd.press(BOB_TG, data="approve-everything")
    assert tgd.poll() == 0
    tgd.tick()
    tgd.tick()
    assert not tgd.pull(number).merged
    reasons = _refused(tgd)
    assert len(reasons) == 3
    assert "does not verify" in reasons[0] and "does not verify" in reasons[1]
    assert reasons[2].startswith("malformed callback data")


def test_replayed_button_from_another_pr_or_message_is_refused(tgd: TgHarness) -> None:
    """The approve data of PR 1's message pressed on PR 2's message: bound to another message."""
    tgd.configure_telegram()
    first = tgd.tier2_pr("t-a")
    second = tgd.tier2_pr("t-b")
    tgd.tick()
    m1, m2 = tgd.messages()
    approve_1 = m1["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    tgd.press(ALICE_TG, message=m2["message_id"], data=approve_1)
    assert tgd.poll() == 0
    assert _refused(tgd) == ["the button is not on this request's message"]
    tgd.press(ALICE_TG, "✅ Approve", message=m1["message_id"])  # the genuine tap counts
    assert tgd.poll() == 1
    tgd.press(ALICE_TG, message=m1["message_id"], data=approve_1)  # a second press: closed
    assert tgd.poll() == 0
    assert "the request is closed" in _refused(tgd)[-1]
    tgd.tick()
    assert tgd.pull(first).merged and not tgd.pull(second).merged


def test_tap_after_the_ttl_is_refused_and_the_request_becomes_a_ballot(tgd: TgHarness) -> None:
    """Past the 5-minute TTL: the message is edited to say so, a tap is refused, and the
    GitHub one-tap becomes a full pending-owner ballot."""
    tgd.configure_telegram()
    number = tgd.tier2_pr()
    tgd.tick()
    tgd.advance(minutes=6)
    tgd.press(BOB_TG, "✅ Approve")
    assert tgd.poll() == 0
    assert "expired" in _refused(tgd)[0]
    tgd.tick()
    tgd.tick()
    assert not tgd.pull(number).merged
    assert "decision:pending-owner" in [lb.name for lb in tgd.issue_for(number, "ballot").labels]
    (msg,) = tgd.messages()
    assert "full ballot" in msg["text"] and "reply_markup" not in msg
    assert msg["text"].startswith(f"Closed: {tgd.sb.repo}#{number}: task work\n")
    assert msg["text"].count("ballot") == 1  # said once ("…ballot. It is now a full ballot.")


def test_tap_on_a_moved_head_is_void(tgd: TgHarness) -> None:
    """A push after the request: the old buttons are refused; a new request for the new head
    is posted and only its tap merges (at the new head)."""
    tgd.configure_telegram()
    number = tgd.tier2_pr()
    tgd.tick()
    old = tgd.messages()[0]
    new_head = tgd.push(number, {"examples/old.py": "print('v3')\n"})
    tgd.press(BOB_TG, "✅ Approve", message=old["message_id"])
    assert tgd.poll() == 0
    assert "head moved" in _refused(tgd)[0]
    tgd.tick()
    msgs = tgd.messages()
    assert len(msgs) == 2 and "head moved" in msgs[0]["text"]
    tgd.press(BOB_TG, "✅ Approve", message=msgs[1]["message_id"])
    assert tgd.poll() == 1
    tgd.tick()
    pull = tgd.pull(number)
    assert pull.merged and pull.head.sha == new_head


def test_no_request_costs_no_telegram_calls(tgd: TgHarness) -> None:
    """With nothing live the poll job makes 0 requests; after the merge it is idle again."""
    tgd.configure_telegram()
    tgd.start()
    before = dict(tgd.tg.state.counters)
    for _ in range(3):
        assert tgd.poll() == 0
    assert dict(tgd.tg.state.counters) == before
    number = tgd.tier2_pr()
    tgd.tick()
    tgd.press(ALICE_TG, "✅ Approve")
    assert tgd.poll() == 1
    tgd.tick()
    assert tgd.pull(number).merged
    before = dict(tgd.tg.state.counters)
    assert tgd.poll() == 0
    assert dict(tgd.tg.state.counters) == before


def test_dead_channel_never_stops_a_tick(tgd: TgHarness) -> None:
    """A chat the bot cannot post to: the tick reports it and goes on; the GitHub 👍 still
    approves within the TTL."""
    tgd.configure_telegram(chat_id=-999)
    number = tgd.tier2_pr()
    report = tgd.tick()
    assert any("chat not found" in e for e in report.errors)
    assert not tgd.messages()
    issue = tgd.issues("one-tap")[0]
    tgd.gh("bob").get_repo(tgd.sb.bot_repo).get_issue(issue.number).create_reaction("+1")
    tgd.tick()
    tgd.tick()
    assert tgd.pull(number).merged


def test_bad_token_and_missing_key_refuse_start(tgd: TgHarness) -> None:
    """A token the API refuses (401) or no HMAC key: a one-line error naming the setting."""
    tgd.configure_telegram()
    (tgd.root / "creds" / "tg-token").write_text("1:wrong\n")
    with pytest.raises(CredentialsError, match=r"401 Unauthorized .*telegram.token_file"):
        tgd.start()
    tgd.configure_telegram()
    tgd.configure_telegram_without("hmac_key_file")
    with pytest.raises(CredentialsError, match="CAPDAEMON_TELEGRAM_HMAC_KEY"):
        tgd.start()
    assert len(HMAC_KEY) >= callback.MIN_KEY_BYTES


def test_unreachable_api_and_429_never_stop_a_tick(tgd: TgHarness) -> None:
    """A 429 (retry_after honoured: no call until it passes) and then an unreachable Bot API:
    ticks finish and report it, nothing merges without a tap, the GitHub record stands."""
    tgd.configure_telegram()
    number = tgd.tier2_pr()
    tgd.tg.state.queue_rate_limit("sendMessage", 30)
    report = tgd.tick()
    assert any("429" in e and "retry after 30" in e for e in report.errors)
    calls = dict(tgd.tg.state.counters)
    tgd.tick()
    assert dict(tgd.tg.state.counters) == calls  # quiet while retry_after runs
    tgd.desk.client.paused_until = tgd.desk.store.paused_until = 0.0  # the 30 s have passed
    tgd.tg.stop()
    report = tgd.tick()
    assert any("API unreachable" in e for e in report.errors)
    assert tgd.poll() == 0
    assert not tgd.pull(number).merged
    assert tgd.issues("one-tap")[0].state == "open"

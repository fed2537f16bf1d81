"""What Fenix's users find in toolshed (issue 60's Fenix lines), over REST."""

from test_approvals import request
from test_lifecycle_events import Stream


def call(base, token, tool, arguments):
    return request(f"{base}/api/v1/tools/{tool}/execute", token, "POST", {"arguments": arguments})


def test_a_stopped_process_has_a_close_request_recorded_with_who_asked_and_how_it_ended(serve, token_for):
    url, admin = serve()
    base = url.rsplit("/mcp", 1)[0]
    alice = token_for("alice")
    stream = Stream(base, alice)

    # One that stops when asked, one that ignores SIGTERM and is killed after the grace.
    status, polite = call(base, alice, "process_exec", {"cmd": "sleep 300", "name": "polite"})
    assert status == 200, polite
    status, stubborn = call(base, alice, "process_exec", {"cmd": "trap '' TERM; while true; do sleep 0.1; done", "name": "stubborn"})
    assert status == 200, stubborn
    polite_id, stubborn_id = polite["structured"]["id"], stubborn["structured"]["id"]

    status, stopped = call(base, alice, "process_stop", {"id": polite_id})
    assert status == 200, stopped
    fields = stopped["structured"]
    assert fields["close_request_id"] == stopped["call_id"]
    assert (fields["requested_by"], fields["asked"], fields["ended"]) == ("alice", "graceful", "graceful"), fields

    status, stopped = call(base, alice, "process_stop", {"id": stubborn_id})
    assert status == 200, stopped
    assert (stopped["structured"]["asked"], stopped["structured"]["ended"]) == ("graceful", "forced"), stopped
    forced_call = stopped["call_id"]

    # The event of each exit says who closed it and how.
    for process_id, ended in ((polite_id, "graceful"), (stubborn_id, "forced")):
        event = stream.wait_for(lambda e, pid=process_id: e.get("type") == "process.exited" and e["data"]["id"] == pid)
        close = event["data"]["close"]
        assert close["requested_by"] == "alice" and close["asked"] == "graceful" and close["ended"] == ended, event

    # And the stop's audit row.
    status, audit = request(f"{base}/api/v1/audit?tool=process_stop&limit=10", admin)
    assert status == 200, audit
    row = next(r for r in audit["audit"] if r["call_id"] == forced_call)
    assert row["note"] == f"close request {forced_call} for {stubborn_id} by alice: asked graceful, ended forced", row

    # A process that had already ended is not closed by anyone.
    status, gone = call(base, alice, "process_stop", {"id": polite_id})
    assert status == 200 and "close_request_id" not in gone["structured"], gone

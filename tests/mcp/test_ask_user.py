"""`ask_user`: the model asks the person, and the answer comes back — through the client's
elicitation in a session, through an input round trip in the 2026-07-28 era, and over REST
(`/api/v1/questions`) when the client can do neither."""

import asyncio
import json
import threading
import time
import urllib.error
import urllib.request

import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

BRANCH = {
    "type": "object",
    "properties": {"branch": {"type": "string", "enum": ["main", "dev"]}, "force": {"type": "boolean"}},
    "required": ["branch"],
}


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


def text(result):
    return " ".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def ask_twice(client, asked):
    """A question with a schema, answered; a free-text one, declined."""
    result = await client.call_tool("ask_user", {"question": "Which branch do I deploy?", "schema": BRANCH})
    assert not result.is_error, text(result)
    assert result.structured_content == {"action": "accept", "content": {"branch": "dev", "force": True}}, result
    assert '"branch":"dev"' in text(result).replace(" ", ""), text(result)
    result = await client.call_tool("ask_user", {"question": "Anything else?"})
    assert not result.is_error and "declined" in text(result), text(result)
    assert [m for m, _ in asked] == ["Which branch do I deploy?", "Anything else?"]
    assert asked[0][1]["properties"]["branch"]["enum"] == ["main", "dev"], asked[0][1]
    assert "answer" in asked[1][1]["properties"], asked[1][1]


def answering(asked):
    answers = [("accept", {"branch": "dev", "force": True}), ("decline", None)]

    async def on_elicit(context, params: types.ElicitRequestParams):
        asked.append((params.message, params.requested_schema))
        action, content = answers.pop(0)
        return types.ElicitResult(action=action, content=content)

    return on_elicit


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_client_asks_the_person_over_stdio(server, mode):
    asked = []

    async def main():
        async with Client(server(), mode=mode, elicitation_callback=answering(asked)) as client:
            await ask_twice(client, asked)

    run(main())


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_client_asks_the_person_over_http(serve, mode):
    url, token = serve()
    asked = []

    async def main():
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode,
                              elicitation_callback=answering(asked)) as client:
                await ask_twice(client, asked)

    run(main())


def test_a_bad_schema_is_refused_before_anyone_is_asked(server):
    async def main():
        async with Client(server(), mode="legacy") as client:
            result = await client.call_tool("ask_user", {"question": "?", "schema": {"type": "object", "properties": {"x": {"type": "array"}}}})
            assert result.is_error and "`x` is of type `array`" in text(result), text(result)

    run(main())


def request(url, token, method="GET", body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            return response.status, json.loads(response.read().decode() or "null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read().decode() or "null")


def test_over_rest_the_question_waits_for_an_answer_there(serve, token_for):
    url, admin = serve()
    base = url.removesuffix("/mcp") + "/api/v1"
    alice = token_for("alice")
    bob = token_for("bob")
    done = {}

    def call():
        done["reply"] = request(f"{base}/tools/ask_user/execute", alice, "POST",
                                {"arguments": {"question": "Which branch?", "schema": BRANCH}})

    thread = threading.Thread(target=call)
    thread.start()
    deadline = time.time() + 10
    while True:
        status, body = request(f"{base}/questions", alice)
        assert status == 200, body
        if body["questions"]:
            break
        assert time.time() < deadline, "no question appeared"
        time.sleep(0.05)
    question = body["questions"][0]
    assert question["owner"] == "alice" and question["message"] == "Which branch?", question
    assert question["schema"]["properties"]["branch"]["enum"] == ["main", "dev"]
    # Another owner neither sees nor answers it; a bad answer is refused with what to send.
    assert request(f"{base}/questions", bob) == (200, {"questions": []})
    status, body = request(f"{base}/questions/{question['id']}/answer", bob, "POST", {"action": "accept"})
    assert status == 403, body
    status, body = request(f"{base}/questions/{question['id']}/answer", alice, "POST", {"action": "maybe"})
    assert status == 400 and "accept, decline, cancel" in body["error"]["message"], body
    status, body = request(f"{base}/questions/{question['id']}/answer", alice, "POST",
                           {"action": "accept", "content": {"branch": "main"}})
    assert status == 200 and body["answered"]["id"] == question["id"], body
    thread.join(30)
    status, reply = done["reply"]
    assert status == 200 and not reply["is_error"], reply
    assert reply["structured"] == {"action": "accept", "content": {"branch": "main"}}, reply
    # Answered, it is gone.
    status, body = request(f"{base}/questions/{question['id']}/answer", admin, "POST", {"action": "decline"})
    assert status == 404, body


def test_a_round_trip_answer_must_fit_the_question_and_answer_only_what_was_asked(server):
    async def never(context, params):
        raise AssertionError("this test answers by hand")

    async def main():
        async with Client(server(), mode="auto", elicitation_callback=never) as client:
            session = client.session
            args = {"question": "Which branch?", "schema": BRANCH}
            first = await session.call_tool("ask_user", args, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult) and list(first.input_requests) == ["ask-0"], first
            state = first.request_state
            bad = await session.call_tool("ask_user", args, request_state=state,
                                          input_responses={"ask-0": {"action": "accept", "content": {"branch": "prod"}}})
            assert bad.is_error and "does not allow" in bad.content[0].text, bad
            missing = await session.call_tool("ask_user", args, request_state=state,
                                              input_responses={"ask-0": {"action": "accept", "content": {}}})
            assert missing.is_error and "lacks the required field `branch`" in missing.content[0].text, missing
            # Without the state, an answer is not taken: the question is asked again.
            again = await session.call_tool("ask_user", args, allow_input_required=True,
                                            input_responses={"ask-0": {"action": "accept", "content": {"branch": "main"}}})
            assert isinstance(again, types.InputRequiredResult), again
            good = await session.call_tool("ask_user", args, request_state=state,
                                           input_responses={"ask-0": {"action": "accept", "content": {"branch": "main"}}})
            assert not good.is_error and good.structured_content["content"] == {"branch": "main"}, good

    run(main())

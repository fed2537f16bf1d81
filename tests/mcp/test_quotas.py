"""A quota of 5 calls a minute on a group: the 6th call is `rate_limited` with the seconds
to wait, through MCP (the Python client) and REST (429 with Retry-After)."""

import asyncio
import json
import urllib.error
import urllib.request

from mcp import Client

QUOTA = """
[[quotas]]
name = "exec per minute"
tools = ["group:exec"]
calls_per_minute = 5
"""


def test_mcp_the_sixth_call_in_a_minute_is_rate_limited(server, home, workspace):
    config = home / "quota.toml"
    config.write_text(QUOTA)
    params = server("--config", str(config))

    async def main():
        async with Client(params, mode="legacy") as client:
            for i in range(5):
                ok = await client.call_tool("exec_command", {"cmd": f"echo {i}"})
                assert not ok.is_error, ok.content
            limited = await client.call_tool("exec_command", {"cmd": "echo 6"})
            assert limited.is_error
            text = limited.content[0].text
            assert "rate limited" in text and "exec per minute" in text and "retry after" in text, text
            # Another group is not counted.
            calc = await client.call_tool("calculator", {"expression": "1+1"})
            assert not calc.is_error

    asyncio.run(asyncio.wait_for(main(), timeout=60))


def test_rest_the_sixth_call_is_429_with_retry_after(serve, home):
    (home / "quota.toml").write_text(QUOTA)
    url, token = serve({"TOOLSHED_CONFIG": str(home / "quota.toml")})
    base = url.removesuffix("/mcp")

    def call():
        request = urllib.request.Request(
            f"{base}/api/v1/tools/exec_command/execute",
            data=json.dumps({"arguments": {"cmd": "true"}}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, dict(response.headers), json.loads(response.read())
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), json.loads(e.read())

    for _ in range(5):
        status, _, body = call()
        assert status == 200, body
    status, headers, body = call()
    assert status == 429, body
    assert body["error"]["kind"] == "rate_limited"
    retry = body["error"]["details"]["retry_after"]
    assert 1 <= retry <= 60
    assert {k.lower(): v for k, v in headers.items()}.get("retry-after") == str(retry)

"""A Tasks-extension client for the Python `mcp` client (which has none of its own): the
extension declared, `resultType: "task"` handed back to the caller, and `tasks/get` and
`tasks/cancel` sent with the task id in the Mcp-Name header, as the 2026-07-28 era routes
them over HTTP. Shared by tests/mcp/test_tasks.py and tests/rest/test_replicas.py."""

import asyncio
import time
from typing import Any, Literal

from mcp import types
from mcp.client.extension import ClientExtension, ResultClaim
from mcp_types import Result
from pydantic import TypeAdapter

TASKS = "io.modelcontextprotocol/tasks"
ANY = TypeAdapter(dict[str, Any])


class Created(Result):
    """`CreateTaskResult`: what `tools/call` answers when the call became a task."""

    result_type: Literal["task"]
    task_id: str
    status: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


async def unresolved(created, context):
    raise AssertionError(f"the test reads task {created.task_id} itself")


class Tasks(ClientExtension):
    """Declares the Tasks extension and lets `call_tool(..., allow_claimed=True)` hand back
    the task it made."""

    identifier = TASKS

    def claims(self):
        return [ResultClaim(result_type="task", model=Created, resolve=unresolved)]


def text(result):
    return " ".join(c.get("text", "") for c in result.get("content", []))


class GetTask(types.GetTaskRequest):
    # Over HTTP the task id goes in the Mcp-Name header too (routing without the body).
    name_param = "taskId"


class CancelTask(types.CancelTaskRequest):
    name_param = "taskId"


async def get(client, task_id):
    request = GetTask(params=types.GetTaskRequestParams(task_id=task_id))
    return await client.session.send_request(request, ANY)


async def settled(client, task_id, within=30):
    deadline = time.monotonic() + within
    while True:
        task = await get(client, task_id)
        if task["status"] != "working":
            return task
        assert time.monotonic() < deadline, task
        await asyncio.sleep(task.get("pollIntervalMs", 500) / 1000)


class UpdateTaskParams(types.RequestParams):
    task_id: str
    input_responses: dict[str, Any]


class UpdateTask(types.Request[UpdateTaskParams, Literal["tasks/update"]]):
    """`tasks/update`: answers to what a task asks (its `inputRequests`)."""

    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateTaskParams
    name_param = "taskId"


async def update(client, task_id, responses):
    request = UpdateTask(params=UpdateTaskParams(task_id=task_id, input_responses=responses))
    return await client.session.send_request(request, ANY)


async def until(client, task_id, status, within=30):
    """The task once it reaches `status` (or ends)."""
    deadline = time.monotonic() + within
    while True:
        task = await get(client, task_id)
        if task["status"] in (status, "completed", "failed", "cancelled"):
            return task
        assert time.monotonic() < deadline, task
        await asyncio.sleep(0.2)

"""Code intelligence through the Python MCP client, against real language servers:
rust-analyzer on a small crate and pyright on a small Python project (both installed by
scripts/test). Definitions by position and by name, references, hover, symbols,
diagnostics that follow edits made with workspace_edit, a rename across two files applied
all-or-nothing, a killed server started again, and a missing server answered as
unconfigured with the install hint."""

import asyncio
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "lsp"
# pyright-langserver comes with the tests' virtualenv (scripts/test installs it there).
PYRIGHT = Path(sys.executable).parent / "pyright-langserver"


def run(coro, timeout=240):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


async def ok(client, tool, args, restarted=False):
    result = await client.call_tool(tool, args)
    assert not result.is_error, f"{tool} {args}: {text(result)}"
    # A server is started again only after it died: never in a healthy session.
    assert ("started again" in text(result)) == restarted, f"{tool} {args}: {text(result)}"
    return result


def configured(server, home, toml):
    (home / "lsp.toml").write_text(toml)
    params = server()
    params.env = {**params.env, "TOOLSHED_CONFIG": str(home / "lsp.toml")}
    return params


def python_project(server, home, workspace, lsp=""):
    """The Python fixture in the workspace, and server parameters with pyright configured
    (after the `[lsp]` lines given)."""
    if not PYRIGHT.exists():
        pytest.fail(f"{PYRIGHT} is missing; scripts/test installs pyright into the tests' virtualenv")
    shutil.copytree(FIXTURES / "python", workspace, dirs_exist_ok=True)
    return configured(server, home, f'{lsp}\n[lsp.python]\ncommand = ["{PYRIGHT}", "--stdio"]\n')


def servers_in(workspace, name):
    """The pids of the language servers named `name` working in `workspace`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if name in cmdline and cwd.startswith(str(workspace)):
            found.append(int(entry.name))
    return found


async def wait_for_diagnostics(client, path, want_errors, tries=20):
    """`lsp` diagnostics waits for the server to settle; a server's check may still start
    late on a loaded machine, so ask again a few times before failing."""
    for _ in range(tries):
        result = await ok(client, "lsp", {"operation": "diagnostics", "path": path})
        if (result.structured_content["errors"] > 0) == want_errors:
            return result
        await asyncio.sleep(0.5)
    raise AssertionError(f"diagnostics of {path} never {'showed' if want_errors else 'cleared'} errors: {text(result)}")


def test_rust_analyzer_definitions_references_hover_diagnostics_rename_and_a_crash(server, home, workspace):
    if not shutil.which("rust-analyzer"):
        pytest.fail("rust-analyzer is not installed; scripts/test installs it (rustup component add rust-analyzer)")
    shutil.copytree(FIXTURES / "rust", workspace, dirs_exist_ok=True)
    params = configured(server, home, "[lsp]\nrequest_timeout_secs = 120\n")

    async def main():
        async with Client(params, mode="legacy") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert {"lsp", "lsp_rename"} <= set(names)

            # By position: `circle_area` used in lib.rs, defined in geometry.rs.
            by_position = await ok(client, "lsp", {"operation": "definition", "path": "src/lib.rs", "line": 7, "column": 23})
            first = by_position.structured_content["locations"][0]
            assert (first["path"], first["line"], first["column"]) == ("src/geometry.rs", 18, 8), text(by_position)
            assert first["text"] == "pub fn circle_area(r: f64) -> f64 {"
            # By name alone.
            by_name = await ok(client, "lsp", {"operation": "definition", "symbol": "circle_area"})
            assert [(l["path"], l["line"]) for l in by_name.structured_content["locations"]] == [("src/geometry.rs", 18)]

            refs = await ok(client, "lsp", {"operation": "references", "path": "src/geometry.rs", "symbol": "circle_area"})
            places = sorted((l["path"], l["line"]) for l in refs.structured_content["locations"])
            assert places == [("src/geometry.rs", 18), ("src/lib.rs", 3), ("src/lib.rs", 7)], text(refs)

            hover = await ok(client, "lsp", {"operation": "hover", "path": "src/lib.rs", "symbol": "single"})
            assert "f64" in hover.structured_content["hover"]

            outline = await ok(client, "lsp", {"operation": "document_symbols", "path": "src/geometry.rs"})
            symbols = {(s["name"], s["line"]) for s in outline.structured_content["symbols"]}
            assert {("Circle", 2), ("Shape", 7), ("circle_area", 18)} <= symbols, text(outline)

            impls = await ok(client, "lsp", {"operation": "implementation", "path": "src/geometry.rs", "symbol": "Shape"})
            assert [l["line"] for l in impls.structured_content["locations"]] == [11]

            # Diagnostics follow an edit made with the workspace tools.
            await wait_for_diagnostics(client, "src/lib.rs", want_errors=False)
            await ok(client, "workspace_read", {"path": "src/lib.rs"})
            await ok(client, "workspace_edit", {"path": "src/lib.rs", "old_text": "let single: f64", "new_text": "let single: bool"})
            broken = await wait_for_diagnostics(client, "src/lib.rs", want_errors=True)
            error = broken.structured_content["diagnostics"][0]
            assert error["severity"] == "error" and error["line"] == 7, text(broken)
            assert "let single: bool" in error["text"]
            await ok(client, "workspace_edit", {"path": "src/lib.rs", "old_text": "let single: bool", "new_text": "let single: f64"})
            await wait_for_diagnostics(client, "src/lib.rs", want_errors=False)

            # A rename touching a file the caller has not read is refused whole.
            before = {p: (workspace / p).read_text() for p in ("src/lib.rs", "src/geometry.rs")}
            refused = await client.call_tool("lsp_rename", {"path": "src/lib.rs", "symbol": "circle_area", "line": 7, "new_name": "area_of_circle"})
            assert refused.is_error and "has not been read" in text(refused) and "No file was changed" in text(refused)
            assert {p: (workspace / p).read_text() for p in before} == before
            await ok(client, "workspace_read", {"path": "src/geometry.rs"})
            renamed = await ok(client, "lsp_rename", {"path": "src/lib.rs", "symbol": "circle_area", "line": 7, "new_name": "area_of_circle"})
            assert renamed.structured_content["edits"] == 3, text(renamed)
            assert "use geometry::area_of_circle;" in (workspace / "src/lib.rs").read_text()
            assert "pub fn area_of_circle(r: f64)" in (workspace / "src/geometry.rs").read_text()
            assert "circle_area" not in (workspace / "src/lib.rs").read_text()
            await wait_for_diagnostics(client, "src/lib.rs", want_errors=False)

            # A server killed mid-session is started again by the next call.
            pids = servers_in(workspace, "rust-analyzer")
            assert pids, "no rust-analyzer process found in the workspace"
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            await asyncio.sleep(0.5)
            again = await ok(client, "lsp", {"operation": "definition", "path": "src/lib.rs", "symbol": "area_of_circle", "line": 7}, restarted=True)
            assert again.structured_content["locations"][0]["line"] == 18

    run(main())


def test_pyright_by_position_and_name_diagnostics_and_rename(server, home, workspace):
    params = python_project(server, home, workspace)

    async def main():
        async with Client(params, mode="legacy") as client:
            by_position = await ok(client, "lsp", {"operation": "definition", "path": "main.py", "line": 5, "column": 21})
            first = by_position.structured_content["locations"][0]
            assert (first["path"], first["line"], first["column"]) == ("geometry.py", 1, 5), text(by_position)
            by_name = await ok(client, "lsp", {"operation": "definition", "symbol": "circle_area", "language": "python"})
            assert ("geometry.py", 1) in [(l["path"], l["line"]) for l in by_name.structured_content["locations"]], text(by_name)

            hover = await ok(client, "lsp", {"operation": "hover", "path": "main.py", "symbol": "circle_area", "line": 5})
            assert "(r: float) -> float" in hover.structured_content["hover"]

            await wait_for_diagnostics(client, "main.py", want_errors=False)
            await ok(client, "workspace_read", {"path": "main.py"})
            await ok(client, "workspace_edit", {"path": "main.py", "old_text": "single: float", "new_text": "single: str"})
            broken = await wait_for_diagnostics(client, "main.py", want_errors=True)
            assert broken.structured_content["diagnostics"][0]["line"] == 5, text(broken)
            await ok(client, "workspace_edit", {"path": "main.py", "old_text": "single: str", "new_text": "single: float"})
            await wait_for_diagnostics(client, "main.py", want_errors=False)

            # A change made on disk, not through toolshed, to a file the server was never
            # shown reaches it through the watch on the project.
            pids = servers_in(workspace, "pyright")
            assert pids, "no pyright process found in the workspace"
            geometry = workspace / "geometry.py"
            original = geometry.read_text()
            geometry.write_text(original.replace("-> float:", "-> str:").replace("return 3.14159 * r * r", "return 'x'"))
            await wait_for_diagnostics(client, "main.py", want_errors=True)
            geometry.write_text(original)
            await wait_for_diagnostics(client, "main.py", want_errors=False)

            await ok(client, "workspace_read", {"path": "geometry.py"})
            renamed = await ok(client, "lsp_rename", {"path": "geometry.py", "symbol": "circle_area", "new_name": "area"})
            assert sorted(f["path"] for f in renamed.structured_content["files"]) == ["geometry.py", "main.py"], text(renamed)
            assert "from geometry import area" in (workspace / "main.py").read_text()
            assert "def area(r: float)" in (workspace / "geometry.py").read_text()
            # The same server all along (pyright exits when it thinks its client is gone).
            await asyncio.sleep(4)
            await ok(client, "lsp", {"operation": "hover", "path": "main.py", "symbol": "area", "line": 5})
            assert servers_in(workspace, "pyright") == pids

    run(main())


def test_a_missing_server_is_unconfigured_with_the_install_hint(server, toolshed_bin, home, workspace):
    (workspace / "app.py").write_text("x = 1\n")
    params = configured(server, home, '[lsp.python]\ncommand = ["no-such-langserver", "--stdio"]\n')

    async def main():
        async with Client(params, mode="legacy") as client:
            result = await client.call_tool("lsp", {"operation": "definition", "path": "app.py", "line": 1, "column": 1})
            assert result.is_error
            message = text(result)
            assert "`no-such-langserver` is not installed" in message and "pip install pyright" in message, message

    run(main())
    # The error's kind, as the CLI (and REST) name it.
    out = subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), "call", "lsp", "--args", '{"operation": "hover", "path": "app.py", "line": 1, "column": 1}'],
        env={**os.environ, "TOOLSHED_HOME": str(home), "TOOLSHED_CONFIG": str(home / "lsp.toml")},
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode != 0 and "[unconfigured]" in out.stderr + out.stdout, out


def test_a_rustup_proxy_without_its_component_is_unconfigured_with_the_fix(server, toolshed_bin, home, workspace, tmp_path):
    # Failed before: the proxy counted as an installed server, and the call failed with
    # the end of rustup's backtrace (issue 53). A rustup of our own that knows no
    # rust-analyzer, with `rust-analyzer` a link to it as rustup installs its proxies.
    bin_dir = tmp_path / "cargo-bin"
    bin_dir.mkdir()
    (bin_dir / "rustup").write_text(
        "#!/bin/sh\n"
        "if [ \"$1\" = which ]; then echo \"error: Unknown binary '$2' in official toolchain 'stable'\" >&2; exit 1; fi\n"
        "echo 'error: Unknown binary' >&2; echo '   12: std::rt::lang_start' >&2; exit 1\n"
    )
    (bin_dir / "rustup").chmod(0o755)
    (bin_dir / "rust-analyzer").symlink_to("rustup")
    (workspace / "Cargo.toml").write_text('[package]\nname = "p"\nversion = "0.1.0"\nedition = "2021"\n')
    (workspace / "src").mkdir()
    (workspace / "src" / "main.rs").write_text("fn main() {}\n")
    params = configured(server, home, f'[lsp.rust]\ncommand = ["{bin_dir / "rust-analyzer"}"]\n')

    async def main():
        async with Client(params, mode="legacy") as client:
            result = await client.call_tool("lsp", {"operation": "hover", "path": "src/main.rs", "line": 1, "column": 4})
            assert result.is_error
            message = text(result)
            assert "is a rustup proxy" in message and "no `rust-analyzer` component" in message, message
            assert "rustup component add rust-analyzer" in message, message
            assert "lang_start" not in message, message

    run(main())
    # With another language's server there the plugin is available; the Rust call still
    # answers unconfigured, naming the proxy.
    params = configured(server, home, f'[lsp.rust]\ncommand = ["{bin_dir / "rust-analyzer"}"]\n'
                        f'[lsp.python]\ncommand = ["{PYRIGHT}", "--stdio"]\n')
    run(main())
    out = subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), "call", "lsp", "--args", '{"operation": "hover", "path": "src/main.rs", "line": 1, "column": 4}'],
        env={**os.environ, "TOOLSHED_HOME": str(home), "TOOLSHED_CONFIG": str(home / "lsp.toml")},
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode != 0 and "[unconfigured]" in out.stderr + out.stdout, out


def test_an_idle_server_is_stopped_and_the_next_call_starts_one(server, home, workspace):
    params = python_project(server, home, workspace, lsp="[lsp]\nidle_timeout_secs = 2\n")

    async def main():
        async with Client(params, mode="legacy") as client:
            await ok(client, "lsp", {"operation": "hover", "path": "main.py", "symbol": "circle_area", "line": 5})
            assert servers_in(workspace, "pyright")
            for _ in range(50):
                if not servers_in(workspace, "pyright"):
                    break
                await asyncio.sleep(0.2)
            else:
                raise AssertionError("the idle language server was not stopped")
            # Stopped for being idle is not a crash: the next call starts a server quietly.
            again = await ok(client, "lsp", {"operation": "hover", "path": "main.py", "symbol": "circle_area", "line": 5})
            assert "(r: float) -> float" in again.structured_content["hover"]

    run(main())


def test_a_rename_is_held_to_the_rules_on_every_file_the_server_names(server, home, workspace):
    # Failed before: lsp_rename declares only `path`, and the rule on writes to main.py did
    # not see the server's edit of main.py, which was written.
    params = python_project(
        server,
        home,
        workspace,
        '[[policy.rule]]\nname = "main is frozen"\nwhen = { writes = { glob = "main.py" } }\n'
        'decision = "deny"\n',
    )

    async def main():
        async with Client(params, mode="legacy") as client:
            # The server learns of main.py's use of the name first.
            await ok(client, "lsp", {"operation": "definition", "path": "main.py", "line": 5, "column": 21})
            await wait_for_diagnostics(client, "main.py", want_errors=False)
            await ok(client, "workspace_read", {"path": "geometry.py"})
            await ok(client, "workspace_read", {"path": "main.py"})
            before = {p: (workspace / p).read_text() for p in ["geometry.py", "main.py"]}
            refused = await client.call_tool(
                "lsp_rename", {"path": "geometry.py", "symbol": "circle_area", "new_name": "area"}
            )
            said = text(refused)
            assert refused.is_error and "main is frozen" in said and "main.py" in said, said
            assert "nothing was changed" in said, said
            assert {p: (workspace / p).read_text() for p in before} == before

    run(main())
